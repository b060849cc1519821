package correlate

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

func mnt(id, parent int, mp, optional string) *procfs.Mount {
	return procfs.NewMount(id, parent, procfs.MountShape{Mountpoint: mp, Optional: optional, FSType: "tmpfs", Source: "t", Root: "/"})
}

// TestTableIndex: lookups by ID through the sorted index, the root, and a
// re-read table sharing its unchanged entries with the one before.
func TestTableIndex(t *testing.T) {
	old := NewTable(1, []*procfs.Mount{mnt(30, 1, "/", ""), mnt(7, 30, "/a", ""), mnt(12, 30, "/b", "")}, time.Time{}, 0)
	if old.mount(7).Mountpoint != "/a" || old.mount(12).Mountpoint != "/b" || old.mount(8) != nil || old.mount(99) != nil {
		t.Fatal("lookup by ID")
	}
	if old.Root().ID != 30 || old.Parent(old.mount(12)).ID != 30 {
		t.Fatal("root or parent")
	}
	cur := NewTable(1, []*procfs.Mount{mnt(30, 1, "/", ""), mnt(7, 30, "/a", "shared:1"), mnt(13, 30, "/c", "")}, time.Time{}, 0)
	l := NewLedger(16)
	l.Store(old)
	l.Store(cur)
	if cur.Mounts[0] != old.Mounts[0] {
		t.Error("unchanged entry not shared")
	}
	if cur.Mounts[1] == old.Mounts[1] || cur.Mounts[1].Optional != "shared:1" {
		t.Error("changed entry shared")
	}
	if l.Previous(1) != old {
		t.Error("previous table lost")
	}
}

// TestContained: a plain mount or unmount in a namespace without shared
// mounts leaves the other tables fresh; anything that may propagate, or is
// judged on a table behind other changes, makes every table stale.
func TestContained(t *testing.T) {
	private := []*procfs.Mount{mnt(1, 0, "/", ""), mnt(2, 1, "/scratch", "")}
	shared := []*procfs.Mount{mnt(1, 0, "/", "shared:1")}
	l := NewLedger(16)
	l.Store(NewTable(10, private, time.Time{}, l.Seq()))
	l.Store(NewTable(20, shared, time.Time{}, l.Seq()))
	l.Store(NewTable(30, private, time.Time{}, l.Seq()))
	ev := func(ns uint32, kind event.Kind, flags uint64) *event.Event {
		return &event.Event{Kind: kind, MntNS: ns, Flags: flags, Target: "/scratch/x"}
	}
	for _, e := range []*event.Event{ev(10, event.KindMount, unix.MS_BIND), ev(10, event.KindUmount, 0), ev(10, event.KindMount, 0)} {
		l.Record(e)
		if l.Fresh(10) || !l.Fresh(20) || !l.Fresh(30) {
			t.Fatalf("%s in a private namespace: fresh 10=%v 20=%v 30=%v", e.Kind, l.Fresh(10), l.Fresh(20), l.Fresh(30))
		}
	}
	failed := ev(10, event.KindMount, unix.MS_BIND)
	failed.Ret = -2
	l.Record(failed)
	if !l.Fresh(20) {
		t.Error("a failed mount made tables stale")
	}
	// Under a shared mount: its own table and its group's go stale (see
	// TestReach), a private namespace's stays fresh.
	l = NewLedger(16)
	l.Store(NewTable(20, shared, time.Time{}, l.Seq()))
	l.Store(NewTable(30, private, time.Time{}, l.Seq()))
	l.Record(ev(20, event.KindMount, unix.MS_BIND))
	if l.Fresh(20) || !l.Fresh(30) {
		t.Errorf("a bind under a shared mount: fresh 20=%v (want false), 30=%v (want true)", l.Fresh(20), l.Fresh(30))
	}
	for name, e := range map[string]*event.Event{
		"propagation":   ev(30, event.KindMount, unix.MS_REC|unix.MS_SHARED),
		"move":          ev(30, event.KindMount, unix.MS_MOVE),
		"remount":       ev(30, event.KindMount, unix.MS_REMOUNT),
		"new mount API": ev(30, event.KindMoveMount, 0),
	} {
		l = NewLedger(16)
		l.Store(NewTable(20, shared, time.Time{}, l.Seq()))
		l.Store(NewTable(30, private, time.Time{}, l.Seq()))
		l.Record(e)
		if l.Fresh(20) || l.Fresh(30) {
			t.Errorf("%s: a table stayed fresh", name)
		}
	}
	// An unmount in a namespace whose table the ledger has not: a table in
	// a peer group may have changed, a private one cannot
	// (TestUnreceivingTablesStayFresh).
	l = NewLedger(16)
	l.Store(NewTable(20, shared, time.Time{}, l.Seq()))
	l.Store(NewTable(30, private, time.Time{}, l.Seq()))
	l.Record(ev(99, event.KindUmount, 0))
	if l.Fresh(20) || !l.Fresh(30) {
		t.Errorf("an unmount in a namespace of no table: fresh 20=%v (want false), 30=%v (want true)", l.Fresh(20), l.Fresh(30))
	}
	// Behind a change that may have reached it, a table is not judged.
	l = NewLedger(16)
	l.Store(NewTable(30, private, time.Time{}, l.Seq()))
	l.Store(NewTable(40, shared, time.Time{}, l.Seq()))
	l.Invalidate()
	l.Store(NewTable(40, shared, time.Time{}, l.Seq()))
	l.Record(ev(30, event.KindMount, unix.MS_BIND))
	if l.Fresh(40) {
		t.Error("an event judged on a stale table left others fresh")
	}
}

// TestUnreceivingTablesStayFresh: what reaches other namespaces only by
// propagation (a propagation change, a move, a mount or unmount that
// contained and reach cannot judge, the new mount API) leaves fresh a
// table none of whose mounts is in a peer group, and makes the others
// stale; a bind remount changes its own table alone; a superblock remount
// (the options every namespace shows for the filesystem) makes every table
// stale.
func TestUnreceivingTablesStayFresh(t *testing.T) {
	private := []*procfs.Mount{mnt(1, 0, "/", ""), mnt(2, 1, "/scratch", "")}
	slave := []*procfs.Mount{mnt(1, 0, "/", "master:1")}
	shared := []*procfs.Mount{mnt(1, 0, "/", "shared:1")}
	ev := func(kind event.Kind, flags uint64) *event.Event {
		return &event.Event{Kind: kind, MntNS: 40, Flags: flags, Target: "/x"}
	}
	for _, tc := range []struct {
		name                   string
		ev                     *event.Event
		private, slave, shared bool // fresh after
	}{
		{"make-rprivate", ev(event.KindMount, unix.MS_REC|unix.MS_PRIVATE), true, false, false},
		{"make-rslave", ev(event.KindMount, unix.MS_REC|unix.MS_SLAVE), true, false, false},
		{"move", ev(event.KindMount, unix.MS_MOVE), true, false, false},
		{"bind", ev(event.KindMount, unix.MS_BIND|unix.MS_REC), true, false, false},
		{"unmount", ev(event.KindUmount, 0), true, false, false},
		{"move_mount", ev(event.KindMoveMount, 0), true, false, false},
		{"mount_setattr", ev(event.KindMountSetattr, 0), true, false, false},
		{"bind remount", ev(event.KindMount, unix.MS_REMOUNT|unix.MS_BIND|unix.MS_RDONLY), true, true, true},
		{"superblock remount", ev(event.KindMount, unix.MS_REMOUNT|unix.MS_RDONLY), false, false, false},
	} {
		l := NewLedger(16)
		l.Store(NewTable(10, private, time.Time{}, l.Seq()))
		l.Store(NewTable(20, slave, time.Time{}, l.Seq()))
		l.Store(NewTable(30, shared, time.Time{}, l.Seq()))
		l.Store(NewTable(40, shared, time.Time{}, l.Seq()))
		l.Invalidate() // mnt:[40]'s table is behind: contained and reach cannot judge
		for _, ns := range []uint32{10, 20, 30} {
			l.Store(NewTable(ns, l.Table(ns).Mounts, time.Time{}, l.Seq()))
		}
		l.Record(tc.ev)
		if l.Fresh(10) != tc.private || l.Fresh(20) != tc.slave || l.Fresh(30) != tc.shared {
			t.Errorf("%s: fresh private=%v slave=%v shared=%v, want %v %v %v", tc.name, l.Fresh(10), l.Fresh(20), l.Fresh(30), tc.private, tc.slave, tc.shared)
		}
	}
}

// TestOwnOnly: a namespace's creation (unshare, clone) copies mounts into
// the new namespace and changes no table that exists; a pivot_root, which
// the kernel refuses under a shared mount, changes its own namespace's
// table alone. Other tables stay fresh, kept ones included: a node
// starting a container does not make a failure elsewhere read them again.
func TestOwnOnly(t *testing.T) {
	shared := []*procfs.Mount{mnt(1, 0, "/", "shared:1")}
	for name, e := range map[string]*event.Event{
		"unshare":    {Kind: event.KindUnshare, MntNS: 20, MntNSBefore: 20, MntNSAfter: 50},
		"clone":      {Kind: event.KindNewNSFork, MntNS: 20, ParentMntNS: 20, ChildMntNS: 50},
		"pivot_root": {Kind: event.KindPivotRoot, MntNS: 30, Path: "/rootfs", Target: "/rootfs/.old"},
	} {
		l := NewLedger(16)
		l.Store(NewTable(20, shared, time.Time{}, l.Seq()))
		l.Store(NewTable(30, shared, time.Time{}, l.Seq()))
		l.Record(e)
		if !l.Fresh(20) || l.Fresh(30) != (e.Kind != event.KindPivotRoot) {
			t.Errorf("%s: fresh 20=%v 30=%v, want 20 fresh, 30 %v", name, l.Fresh(20), l.Fresh(30), e.Kind != event.KindPivotRoot)
		}
	}
}
