package daemon

import (
	"slices"
	"testing"

	"github.com/mntleak/mntleak/internal/kmount"
)

// uids is the unique ids of s, in its order.
func uids(s mountSet) []uint64 {
	out := make([]uint64, 0, len(s))
	for _, m := range s {
		out = append(out, m.uid)
	}
	return out
}

// TestMountSetKeepsUniqueIDOrder: a listing in any order, attaches after
// it and before its last, a repeated attach (a move), detaches: the set
// stays sorted, each id once, and a detach returns what was kept of the
// mount.
func TestMountSetKeepsUniqueIDOrder(t *testing.T) {
	s := newMountSet([]kmount.Mount{
		{ID: 30, OldID: 3, OldParent: 1, Point: "/c"},
		{ID: 10, OldID: 1, OldParent: 0, Point: "/"},
		{ID: 20, OldID: 2, OldParent: 1, Point: "/b"},
		{ID: 20, OldID: 2, OldParent: 1, Point: "/b"}, // listed twice
	})
	if got, want := uids(s), []uint64{10, 20, 30}; !slices.Equal(got, want) {
		t.Fatalf("listed: %v, want %v", got, want)
	}
	s.put(watchedOf(kmount.Mount{ID: 40, OldID: 4, Point: "/d"}))
	s.put(watchedOf(kmount.Mount{ID: 25, OldID: 5, Point: "/e"}))
	s.put(watchedOf(kmount.Mount{ID: 20, OldID: 2, OldParent: 1, Point: "/moved"}))
	if got, want := uids(s), []uint64{10, 20, 25, 30, 40}; !slices.Equal(got, want) {
		t.Fatalf("after attaches: %v, want %v", got, want)
	}
	m, ok := s.remove(20)
	if !ok || m.id != 2 || m.parent != 1 || m.point.Value() != "/moved" {
		t.Fatalf("remove 20: %+v %v, want mount 2 under 1 at /moved", m, ok)
	}
	if _, ok := s.remove(20); ok {
		t.Fatal("remove 20 twice: found it again")
	}
	if got, want := uids(s), []uint64{10, 25, 30, 40}; !slices.Equal(got, want) {
		t.Fatalf("after the detach: %v, want %v", got, want)
	}
	if !s.has(25) || s.has(20) || s.has(99) {
		t.Fatalf("has: 25 %v, 20 %v, 99 %v; want true, false, false", s.has(25), s.has(20), s.has(99))
	}
	if i := m.info(); i.ID != 2 || i.Parent != 1 || i.Mountpoint != "/moved" {
		t.Fatalf("info: %+v", i)
	}
}
