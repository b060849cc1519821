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
