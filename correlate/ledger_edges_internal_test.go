package correlate

import (
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// A table read before a change that may reach every table stays stale
// through every change after it: lost events (Invalidate) after a remount
// never bring the change count back to the one it was read at, whether it
// is kept true by the kernel's mount notes or not.
func TestStaleTableStaysStaleThroughLaterChanges(t *testing.T) {
	for _, watched := range []bool{false, true} {
		l := NewLedger(16)
		if watched {
			l.watch(5, true)
		}
		l.Store(NewTable(5, procfs.MountsOf(noteMounts(t, "1 0 254:0 / / rw - ext4 /dev/vda rw\n")), time.Time{}, l.Seq()))
		l.Record(&event.Event{Kind: event.KindMount, MntNS: 6, Target: "/srv", Flags: unix.MS_REMOUNT})
		l.Invalidate()
		if l.Fresh(5) {
			t.Errorf("watched %v: table read before a remount and lost events is fresh, want stale", watched)
		}
	}
	l := NewLedger(16)
	l.Store(NewTable(5, procfs.MountsOf(noteMounts(t, "1 0 254:0 / / rw - ext4 /dev/vda rw\n")), time.Time{}, l.Seq()))
	l.Invalidate()
	l.Record(&event.Event{Kind: event.KindMount, MntNS: 6, Target: "/srv", Flags: unix.MS_REMOUNT})
	if l.Fresh(5) {
		t.Errorf("table read before lost events and a remount is fresh, want stale")
	}
}

// Settled returns, in inode order, the namespaces quiet for the delay or
// longer (exactly the delay counts), and forgets them; a namespace active
// since stays.
func TestSettledAtTheDelayInInodeOrder(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	l := NewLedger(16)
	for _, ns := range []uint32{9, 5, 7, 8, 6} {
		l.MarkDirty(ns, at)
	}
	l.MarkDirty(4, at.Add(time.Millisecond))
	got := l.Settled(at.Add(100*time.Millisecond), 100*time.Millisecond)
	if fmt.Sprint(got) != "[5 6 7 8 9]" {
		t.Errorf("settled %v, want [5 6 7 8 9]", got)
	}
	if len(l.dirty) != 1 || !l.dirty[4].Equal(at.Add(time.Millisecond)) {
		t.Errorf("still dirty %v, want only namespace 4", l.dirty)
	}
}

// A peer group's forward stays in the index while any current table
// declares it: replacing one of two tables that show "shared:3 master:1"
// keeps 1->3, and a group whose forwards are all gone leaves the index.
func TestPeerGroupForwardCountedPerTable(t *testing.T) {
	x := newGroupIndex()
	a := NewTable(5, []*procfs.Mount{mnt(1, 0, "/", "shared:3 master:1")}, time.Time{}, 0)
	b := NewTable(6, []*procfs.Mount{mnt(1, 0, "/", "shared:2 master:1"), mnt(2, 1, "/x", "shared:3 master:1")}, time.Time{}, 0)
	x.add(a)
	x.add(b)
	x.remove(a)
	if got := fmt.Sprint(x.forward); got != "map[1:map[2:1 3:1]]" {
		t.Errorf("one of two tables with 1->3 removed: forwards %s, want map[1:map[2:1 3:1]]", got)
	}
	x.remove(b)
	if got := fmt.Sprint(x.forward); got != "map[]" {
		t.Errorf("every table removed: forwards %s, want map[]", got)
	}
}

// pidTables is a /proc that answers Mountinfo only: each pid's namespace
// and mountinfo text.
type pidTables struct {
	procfs.Proc
	ns    map[int]uint32
	table map[int]string
}

func (p pidTables) Mountinfo(pid int) (uint32, []*procfs.Mount, error) {
	ns, ok := p.ns[pid]
	if !ok {
		return 0, nil, fmt.Errorf("no process %d", pid)
	}
	ms, err := mountsOf(p.table[pid])
	return ns, ms, err
}

// A namespace's table is read through a member that is still in it: one
// whose pid is in another namespace now (reused, or moved by setns) is
// passed over, and said so when no other member is left.
func TestReadTableSkipsAMemberInAnotherNamespace(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	proc := pidTables{ns: map[int]uint32{50: 31, 51: 30},
		table: map[int]string{50: "1 0 254:0 / / rw - ext4 /dev/vda rw\n", 51: "7 0 0:40 / / rw - tmpfs tmpfs rw\n"}}
	c := New(proc, Options{}, nil)
	n := c.lineage.Created(30, 1, OriginUnshare, Member{PID: 20, Comm: "unshare", Joined: at}, nil)
	c.lineage.Join(30, 1, Member{PID: 50, StartTime: 1, Comm: "moved", Joined: at})
	if err := c.readTable(n); err == nil || err.Error() != "pid 50 is in mnt:[31] now" {
		t.Errorf("only member in another namespace: got error %v, want \"pid 50 is in mnt:[31] now\"", err)
	}
	if tb := c.ledger.Table(30); tb != nil {
		t.Errorf("stored mounts %v of another namespace as mnt:[30]'s", mountIDs(tb))
	}
	c.lineage.Join(30, 1, Member{PID: 51, StartTime: 2, Comm: "sh", Joined: at})
	if err := c.readTable(n); err != nil {
		t.Fatalf("a member still in it: got error %v, want none", err)
	}
	if got := mountIDs(c.ledger.Table(30)); fmt.Sprint(got) != "[7]" {
		t.Errorf("mnt:[30]'s table: mounts %v, want [7] (read through pid 51)", got)
	}
}

// A namespace none of whose members is left is read through the process
// of its latest mount, even when that mount is the oldest event known.
func TestReadThroughTheMounterOfTheOnlyEvent(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	proc := pidTables{ns: map[int]uint32{60: 30}, table: map[int]string{60: "7 0 0:40 / / rw - tmpfs tmpfs rw\n"}}
	c := New(proc, Options{}, nil)
	n := c.lineage.Created(30, 1, OriginUnshare, Member{PID: 20, Comm: "runc", Joined: at}, nil)
	c.ledger.Record(&event.Event{Kind: event.KindMount, PID: 60, MntNS: 30, Target: "/data", Cgroup: "/kubepods/pod1/c1", Time: at})
	c.readThroughMounter(n)
	if tb := c.ledger.Table(30); tb == nil || fmt.Sprint(mountIDs(tb)) != "[7]" {
		t.Errorf("mnt:[30]'s table %v, want one read through mounter pid 60 (mounts [7])", tb)
	}
}
