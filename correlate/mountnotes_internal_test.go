package correlate

import (
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

func noteMounts(t *testing.T, text string) []*mountinfo.Info {
	t.Helper()
	ms, err := mountinfo.GetMountsFromReader(strings.NewReader(text), nil)
	if err != nil {
		t.Fatal(err)
	}
	return ms
}

// mountIDs lists a table's mountinfo ids, in its order.
func mountIDs(t *Table) []int {
	var out []int
	for _, m := range t.Mounts {
		out = append(out, m.ID)
	}
	return out
}

// TestLedgerAppliesNotes: a detach takes the mount out of the namespace's
// table, an attach adds it, at once; a note that does not fit the table
// (a reused id now of another device, an attach it has, a namespace with
// no table) changes nothing; the table's freshness is what it was; the
// previous table stays the last one read through a run of notes.
func TestLedgerAppliesNotes(t *testing.T) {
	l := NewLedger(16)
	read := NewTable(5, procfs.MountsOf(noteMounts(t, "1 0 254:0 / / rw - ext4 /dev/vda rw\n2 1 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n3 1 0:40 / /run rw - tmpfs tmpfs rw\n")), time.Time{}, l.Seq())
	l.Store(read)
	if !l.Fresh(5) {
		t.Fatal("a table just read is not fresh")
	}
	note := func(detach bool, line string) {
		l.applyNote(event.MountNote{NS: 5, Detach: detach, Mount: noteMounts(t, line)[0]})
	}
	note(true, "2 1 7:1 / /srv/vol rw - ext4 /dev/loop1 rw\n") // id 2 reused for another device: not this mount
	if got := mountIDs(l.Table(5)); len(got) != 3 {
		t.Fatalf("a detach of another device's mount changed the table: %v", got)
	}
	note(true, "2 1 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n")
	note(false, "4 1 0:41 / /data rw - tmpfs tmpfs rw\n")
	note(false, "4 1 0:41 / /data rw - tmpfs tmpfs rw\n") // told twice: added once
	l.applyNote(event.MountNote{NS: 6, Mount: noteMounts(t, "9 1 0:42 / /x rw - tmpfs tmpfs rw\n")[0]})
	got := l.Table(5)
	if ids := mountIDs(got); len(ids) != 3 || ids[0] != 1 || ids[1] != 3 || ids[2] != 4 {
		t.Errorf("table %v, want mounts 1 3 4", ids)
	}
	if got.At("/srv/vol") != nil || got.At("/data") == nil {
		t.Errorf("/srv/vol still there or /data missing")
	}
	if !l.Fresh(5) {
		t.Error("the notes made a fresh table stale")
	}
	if l.Previous(5) != read {
		t.Error("the previous table is not the one read before the notes")
	}
	if l.Table(6) != nil {
		t.Error("a note made a table for a namespace never read")
	}
	l.Invalidate()
	note(true, "3 1 0:40 / /run rw - tmpfs tmpfs rw\n")
	if l.Fresh(5) {
		t.Error("a note made a stale table fresh")
	}
}

// TestLedgerKeepsTheTableBeforeATeardown: the notes of a namespace's
// teardown (its root's first) empty its table, and Lived and Forget give
// the table it showed before; a copy detached from a live namespace, or
// the old root a pivot_root left stacked on "/", is no teardown; a table
// read again ends it.
func TestLedgerKeepsTheTableBeforeATeardown(t *testing.T) {
	const text = "90 89 254:0 / / rw - ext4 /dev/vda rw\n91 90 254:0 /pods/vol /rootfs/data rw shared:4 - ext4 /dev/vda rw\n" +
		"92 91 0:70 / /rootfs/data/sub rw shared:5 - tmpfs csi rw\n93 90 0:71 / / rw - tmpfs old-root rw\n"
	l := NewLedger(16)
	read := NewTable(40, procfs.MountsOf(noteMounts(t, text)), time.Time{}, l.Seq())
	l.Store(read)
	detach := func(line string) {
		l.applyNote(event.MountNote{NS: 40, Detach: true, PID: 700, Mount: noteMounts(t, line)[0]})
	}
	detach("93 90 0:71 / / rw - tmpfs old-root rw\n")                    // runc's old root, over the new one
	detach("92 91 0:70 / /rootfs/data/sub rw shared:5 - tmpfs csi rw\n") // a copy a node's rmdir detached
	if got := mountIDs(l.Lived(40)); len(got) != 2 || l.Lived(40) != l.Table(40) {
		t.Fatalf("live namespace: Lived %v, want its table (90 91)", got)
	}
	kept := l.Table(40)
	for _, line := range strings.SplitAfter(strings.TrimSuffix(text, "\n"), "\n")[:2] {
		detach(line) // the teardown: root first
	}
	if got := mountIDs(l.Table(40)); len(got) != 0 {
		t.Errorf("the teardown left mounts %v in the table", got)
	}
	if l.Lived(40) != kept {
		t.Errorf("Lived %v, want the table before the teardown %v", mountIDs(l.Lived(40)), mountIDs(kept))
	}
	if got := l.Forget(40); got != kept || l.Lived(40) != nil || l.Table(40) != nil {
		t.Errorf("Forget gave %v, want the table before the teardown; then Lived %v", got, l.Lived(40))
	}
	// Read again before it died (a lazy unmount of its tree, then a read):
	// the read is what it shows.
	l.Store(NewTable(40, procfs.MountsOf(noteMounts(t, text)), time.Time{}, l.Seq()))
	detach("90 89 254:0 / / rw - ext4 /dev/vda rw\n")
	again := NewTable(40, procfs.MountsOf(noteMounts(t, "94 89 0:72 / / rw - tmpfs new rw\n")), time.Time{}, l.Seq())
	l.Store(again)
	if l.Lived(40) != again {
		t.Errorf("after a read, Lived %v, want the read %v", mountIDs(l.Lived(40)), mountIDs(again))
	}
}
