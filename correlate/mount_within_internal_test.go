package correlate

import (
	"testing"
	"time"

	"github.com/mntleak/mntleak/procfs"
)

// chainTable is a table of mounts 1..n, each mounted on the one before
// (mount 1 on a parent outside the table).
func chainTable(n int) *Table {
	var ms []*procfs.Mount
	for id := 1; id <= n; id++ {
		ms = append(ms, mnt(id, id-1, "/m", ""))
	}
	return NewTable(1, ms, time.Time{}, 0)
}

// TestMountWithinWalksAtMost64Mounts: the walk up from a mount to its
// ancestor looks at 64 mounts, the one given and 63 above it; an ancestor
// 64 steps up is past the bound.
func TestMountWithinWalksAtMost64Mounts(t *testing.T) {
	tab := chainTable(100)
	if !mountWithin(tab, 100, 37) {
		t.Error("mount 100 within 37 (63 steps up) = false, want true")
	}
	if mountWithin(tab, 100, 36) {
		t.Error("mount 100 within 36 (64 steps up) = true, want false: the walk is bounded at 64 mounts")
	}
}

// TestMountWithinEndsOnACycle: a table whose parents form a cycle (a
// torn read) does not hold the walk: it ends, answering false.
func TestMountWithinEndsOnACycle(t *testing.T) {
	tab := NewTable(1, []*procfs.Mount{mnt(10, 11, "/a", ""), mnt(11, 10, "/b", ""), mnt(12, 0, "/", "")}, time.Time{}, 0)
	done := make(chan bool, 1)
	go func() { done <- mountWithin(tab, 10, 12) }()
	select {
	case got := <-done:
		if got {
			t.Error("mount 10 within 12 through the cycle 10 → 11 → 10 = true, want false")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("mountWithin did not end within 5 s on the cycle 10 → 11 → 10")
	}
}
