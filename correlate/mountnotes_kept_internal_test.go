package correlate

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// TestLedgerKeepsWatchedTables: a table read after its namespace's notes
// began stays fresh through a mount and an unmount elsewhere (the notes
// tell them) while an unwatched one goes stale; a remount, a propagation
// change, a move and lost events make both stale; the watch beginning or
// ending makes the table stale once; a mount propagated beneath one the
// table has on the same parent (tucked: its parent changed untold) and a
// note the table cannot take make the kept table stale.
func TestLedgerKeepsWatchedTables(t *testing.T) {
	const watched, other, node = 5, 6, 7
	table := "1 0 254:0 / / rw - ext4 /dev/vda rw\n2 1 0:40 / /srv rw shared:1 - tmpfs tmpfs rw\n3 2 0:41 / /srv/a rw - tmpfs a rw\n"
	l := NewLedger(16)
	read := func(ns uint32) { l.Store(NewTable(ns, noteMounts(t, table), time.Time{}, l.Seq())) }
	read(watched)
	read(other)
	read(node)
	l.watch(watched, true)
	if l.Fresh(watched) || !l.Fresh(other) {
		t.Fatalf("the watch beginning: fresh %v %v, want the watched table stale once, the other fresh", l.Fresh(watched), l.Fresh(other))
	}
	read(watched)
	elsewhere := func(kind event.Kind, flags uint64) {
		l.Record(&event.Event{Kind: kind, MntNS: node, Target: "/srv/b", Flags: flags})
	}
	elsewhere(event.KindMount, 0)
	elsewhere(event.KindUmount, 0)
	if !l.Fresh(watched) || l.Fresh(other) {
		t.Errorf("a mount and an unmount elsewhere: fresh %v %v, want the kept table fresh, the other stale", l.Fresh(watched), l.Fresh(other))
	}
	for _, c := range []struct {
		what string
		hard func()
	}{
		{"a remount", func() { elsewhere(event.KindMount, unix.MS_REMOUNT|unix.MS_RDONLY) }},
		{"a make-private", func() { elsewhere(event.KindMount, unix.MS_PRIVATE) }},
		{"a move", func() { elsewhere(event.KindMount, unix.MS_MOVE) }},
		{"mount_setattr", func() { l.Record(&event.Event{Kind: event.KindMountSetattr, MntNS: node}) }},
		{"lost events", l.Invalidate},
	} {
		read(watched)
		c.hard()
		if l.Fresh(watched) {
			t.Errorf("%s elsewhere left the kept table fresh", c.what)
		}
	}
	read(watched)
	l.applyNote(event.MountNote{NS: watched, Mount: noteMounts(t, "9 2 0:42 / /srv/a rw - tmpfs b rw\n")[0]})
	if l.Fresh(watched) {
		t.Errorf("a mount tucked beneath /srv/a left the kept table fresh")
	}
	read(watched)
	l.applyNote(event.MountNote{NS: watched, Detach: true, Mount: noteMounts(t, "3 2 0:99 / /srv/a rw - tmpfs a rw\n")[0]})
	if l.Fresh(watched) {
		t.Errorf("a detach the table cannot take (another device) left the kept table fresh")
	}
	read(watched)
	l.applyNote(event.MountNote{NS: watched, Mount: noteMounts(t, "10 3 0:43 / /srv/a/x rw - tmpfs x rw\n")[0]})
	if !l.Fresh(watched) || l.Table(watched).At("/srv/a/x") == nil {
		t.Errorf("a mount on /srv/a's own tree: the kept table stale or without it")
	}
	l.watch(watched, false)
	if l.Fresh(watched) {
		t.Errorf("the watch ending left the table fresh")
	}
	read(watched)
	elsewhere(event.KindMount, 0)
	if l.Fresh(watched) {
		t.Errorf("a mount elsewhere after the watch ended left the table fresh")
	}
}
