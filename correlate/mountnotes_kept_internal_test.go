package correlate

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// watchedTable is a namespace's table: /srv/a on a shared /srv.
const watchedTable = "1 0 254:0 / / rw - ext4 /dev/vda rw\n2 1 0:40 / /srv rw shared:1 - tmpfs tmpfs rw\n3 2 0:41 / /srv/a rw - tmpfs a rw\n"

// TestLedgerKeepsWatchedTables: a table read after its namespace's notes
// began stays fresh through a mount and an unmount elsewhere (the notes
// tell them) while an unwatched one goes stale; a remount, a propagation
// change, a move and lost events make both stale; the watch beginning or
// ending makes the table stale once; a mount propagated beneath one the
// table has on the same parent (tucked: its parent changed untold) and a
// note the table cannot take make the kept table stale.
func TestLedgerKeepsWatchedTables(t *testing.T) {
	const watched, other, node = 5, 6, 7
	l := NewLedger(16)
	read := func(ns uint32) {
		l.Store(NewTable(ns, procfs.MountsOf(noteMounts(t, watchedTable)), time.Time{}, l.Seq()))
	}
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

// Two changes that each make a table stale leave it stale together: the
// watch beginning, a mount tucked beneath one of a kept table, a note a
// kept table cannot take, each followed by a mount in the namespace.
func TestLedgerChangesAddUpToStale(t *testing.T) {
	const ns = 5
	l := NewLedger(16)
	read := func() { l.Store(NewTable(ns, procfs.MountsOf(noteMounts(t, watchedTable)), time.Time{}, l.Seq())) }
	for _, c := range []struct {
		what   string
		change func()
	}{
		{"the watch beginning", func() { l.watch(ns, true) }},
		{"a mount tucked beneath /srv/a", func() {
			l.applyNote(event.MountNote{NS: ns, Mount: noteMounts(t, "9 2 0:42 / /srv/a rw - tmpfs b rw\n")[0]})
		}},
		{"a detach the kept table cannot take", func() {
			l.applyNote(event.MountNote{NS: ns, Detach: true, Mount: noteMounts(t, "3 2 0:99 / /srv/a rw - tmpfs a rw\n")[0]})
		}},
	} {
		read()
		c.change()
		l.touch(ns, false)
		if l.Fresh(ns) {
			t.Errorf("%s and a mount left the table fresh, want it stale", c.what)
		}
	}
}

// The daemon's watch notes reach the ledger: from WatchOn a table read
// stays fresh through a mount elsewhere; from WatchOff it goes stale.
func TestNoteWatchOnAndOff(t *testing.T) {
	const ns, node = 5, 7
	c := New(noCommands{}, Options{}, func(*finding.Finding) {})
	read := func() {
		c.ledger.Store(NewTable(ns, procfs.MountsOf(noteMounts(t, watchedTable)), time.Time{}, c.ledger.Seq()))
	}
	elsewhere := func() { c.ledger.Record(&event.Event{Kind: event.KindMount, MntNS: node, Target: "/srv/b"}) }
	c.Note(event.MountNote{NS: ns, Watch: event.WatchOn})
	read()
	elsewhere()
	if !c.ledger.Fresh(ns) {
		t.Errorf("after WatchOn a mount elsewhere made the table stale, want it kept fresh")
	}
	c.Note(event.MountNote{NS: ns, Watch: event.WatchOff})
	read()
	elsewhere()
	if c.ledger.Fresh(ns) {
		t.Errorf("after WatchOff a mount elsewhere left the table fresh, want it stale")
	}
}

// TableOf a namespace the lineage does not know (dead, never seen) is the
// ledger's table as it is, stale or not: there is no process to read it
// through.
func TestTableOfAnUnknownNamespaceIsNotReadAgain(t *testing.T) {
	c := New(noCommands{}, Options{}, func(*finding.Finding) {})
	had := NewTable(5, procfs.MountsOf(noteMounts(t, watchedTable)), time.Time{}, c.ledger.Seq())
	c.ledger.Store(had)
	c.ledger.Invalidate()
	if got, err := c.TableOf(5); got != had || err != nil {
		t.Errorf("TableOf(5) = %p, %v; want the stored table %p, no error", got, err, had)
	}
}

// A detach note marks the pending leaks one of whose copies it may be: a
// copy in the note's namespace of the detached device, or of any device
// when the leak's is not known; not a copy elsewhere, not another device's.
func TestDetachNoteMarksTheLeaksItMayBe(t *testing.T) {
	c := New(noCommands{}, Options{}, func(*finding.Finding) {})
	here, there := &Namespace{Ino: 5}, &Namespace{Ino: 6}
	loop0, loop1 := event.MakeDev(7, 0), event.MakeDev(7, 1)
	leaks := []struct {
		what string
		p    *pendingLeak
		want bool
	}{
		{"a copy here of the device", &pendingLeak{id: identity{dev: loop0}, matches: []match{{ns: here}}}, true},
		{"a copy of an unknown device here", &pendingLeak{id: identity{}, matches: []match{{ns: here}}}, true},
		{"a copy elsewhere of the device", &pendingLeak{id: identity{dev: loop0}, matches: []match{{ns: there}}}, false},
		{"a copy here of another device", &pendingLeak{id: identity{dev: loop1}, matches: []match{{ns: here}}}, false},
		{"a holder with no namespace", &pendingLeak{id: identity{dev: loop0}, matches: []match{{}}}, false},
	}
	for _, l := range leaks {
		c.pending = append(c.pending, l.p)
	}
	c.noteDetached(event.MountNote{NS: 5, Detach: true, Mount: noteMounts(t, "2 1 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n")[0]})
	for _, l := range leaks {
		if l.p.detached != l.want {
			t.Errorf("%s: marked detached %v, want %v", l.what, l.p.detached, l.want)
		}
	}
}
