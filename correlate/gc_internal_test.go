package correlate

import (
	"slices"
	"testing"
	"time"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

var gcStart = time.Date(2026, 11, 26, 21, 0, 0, 0, time.UTC)

// sizedTable is namespace ns's table of n tmpfs mounts, read at at.
func sizedTable(ns uint32, n int, at time.Time) *Table {
	var ms []*procfs.Mount
	for i := 1; i <= n; i++ {
		ms = append(ms, mnt(i, 0, "/run/m"+itoa(i), ""))
	}
	return NewTable(ns, ms, at, 0)
}

// TestExitGraceKeepsADeadNamespacesTable: a collection keeps the last
// table of a namespace whose last process left within ExitGrace, up to
// exactly ExitGrace before (the failure's search takes those: DiedSince),
// and drops that of one gone longer (it published nothing to a shared
// peer group).
func TestExitGraceKeepsADeadNamespacesTable(t *testing.T) {
	c := New(nil, Options{GCInterval: 10 * time.Second, ExitGrace: 10 * time.Second}, nil)
	c.lastGC = gcStart
	c.now = gcStart.Add(10 * time.Second)
	ages := map[uint32]time.Duration{91: time.Second, 92: 10 * time.Second, 93: 10*time.Second + time.Nanosecond}
	for _, ino := range []uint32{93, 92, 91} { // in order of death
		n := c.lineage.Created(ino, 0, OriginUnshare, Member{PID: int(ino), Comm: "unshare", Joined: gcStart}, nil)
		c.lineage.retire(n, c.now.Add(-ages[ino]))
		n.LastTable = sizedTable(ino, 1, gcStart)
	}
	c.collect()
	if len(c.lineage.dead) != 3 || !c.lastGC.Equal(c.now) {
		t.Fatalf("%d dead namespaces, collection at %v; want 3, at %v", len(c.lineage.dead), c.lastGC, c.now)
	}
	for _, n := range c.lineage.dead {
		if got, want := n.LastTable != nil, ages[n.Ino] <= 10*time.Second; got != want {
			t.Errorf("mnt:[%d], gone %v before the collection: last table kept %v, want %v", n.Ino, ages[n.Ino], got, want)
		}
	}
}

// TestMountCapDropsPreviousTablesFirst: over MaxMounts, the previous
// tables go first, in namespace order, until the mounts are down to the
// cap (exactly the cap is under it); no current table is evicted then.
func TestMountCapDropsPreviousTablesFirst(t *testing.T) {
	c := New(nil, Options{MaxMounts: 7}, nil)
	for _, ns := range []uint32{20, 10} {
		c.ledger.Store(sizedTable(ns, 3, gcStart))
		c.ledger.Store(sizedTable(ns, 2, gcStart.Add(time.Second)))
	}
	c.capTables() // 10 mounts: 10's previous table goes
	if c.ledger.Previous(10) != nil || c.ledger.Previous(20) == nil {
		t.Errorf("previous tables kept: mnt:[10] %v, mnt:[20] %v; want mnt:[20]'s alone",
			c.ledger.Previous(10) != nil, c.ledger.Previous(20) != nil)
	}
	if s := c.Size(); s.Mounts != 7 || s.Evicted != 0 {
		t.Errorf("got %d mounts, %d tables evicted; want 7, 0", s.Mounts, s.Evicted)
	}
}

// TestMountCapEvictsTheLeastRecentlyReadTables: with no previous table
// left to drop, the current tables least recently read go first (of two
// read at the same time, the lower namespace), until the mounts are down
// to the cap; each is counted.
func TestMountCapEvictsTheLeastRecentlyReadTables(t *testing.T) {
	c := New(nil, Options{MaxMounts: 4}, nil)
	c.ledger.Store(sizedTable(5, 2, gcStart.Add(time.Second))) // read last
	for _, ns := range []uint32{30, 10, 20} {
		c.ledger.Store(sizedTable(ns, 2, gcStart))
	}
	c.capTables() // 8 mounts: two of the three read first go
	if got, want := c.ledger.namespaces(), []uint32{5, 30}; !slices.Equal(got, want) {
		t.Errorf("tables kept of %v, want %v", got, want)
	}
	if s := c.Size(); s.Mounts != 4 || s.Evicted != 2 {
		t.Errorf("got %d mounts, %d tables evicted; want 4, 2", s.Mounts, s.Evicted)
	}
}

// TestLeakCapDropsClosedLeaksFirst: past maxLeaks records, the oldest
// closed leaks (every holder namespace dead) go, as many as are over the
// cap, before any open one; with none closed, the oldest open ones go.
func TestLeakCapDropsClosedLeaksFirst(t *testing.T) {
	record := func(dead bool) *leakRecord {
		return &leakRecord{namespaces: []*Namespace{{Dead: dead}}, finding: &finding.Finding{}}
	}
	for _, tc := range []struct {
		name    string
		closed  []int // the records whose holders are dead, of maxLeaks+2
		dropped []int
	}{
		{"closed ones", []int{1, 3, 4}, []int{1, 3}},
		{"all open", nil, []int{0, 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := New(nil, Options{}, nil)
			index := map[*leakRecord]int{}
			for i := range maxLeaks + 2 {
				rec := record(slices.Contains(tc.closed, i))
				index[rec] = i
				c.leaks = append(c.leaks, rec)
			}
			c.capLeaks()
			var kept []int
			for _, rec := range c.leaks {
				kept = append(kept, index[rec])
			}
			var dropped []int
			for i := range maxLeaks + 2 {
				if !slices.Contains(kept, i) {
					dropped = append(dropped, i)
				}
			}
			if !slices.Equal(dropped, tc.dropped) || len(kept) != maxLeaks || !slices.IsSorted(kept) {
				t.Errorf("got records %v dropped, %d kept (in order: %v); want %v dropped, %d kept in order",
					dropped, len(kept), slices.IsSorted(kept), tc.dropped, maxLeaks)
			}
		})
	}
}
