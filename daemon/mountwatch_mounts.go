package daemon

import (
	"cmp"
	"slices"
	"unique"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/kmount"
)

// watchedMount is what a detach note will need of a mount, kept from when
// it was listed or attached: a detached mount can no longer be described.
// 32 bytes: a node of 300 namespaces × 300 mounts keeps 90,000 of them.
type watchedMount struct {
	uid        uint64 // STATX_MNT_ID_UNIQUE: never reused
	id, parent int32  // mountinfo's: reused at once
	dev        event.Dev
	// point is one copy of a mount point for every namespace that shows
	// it (container namespaces show the same few).
	point unique.Handle[string]
}

// watchedOf is what a detach will need of m.
func watchedOf(m kmount.Mount) watchedMount {
	return watchedMount{uid: m.ID, id: int32(m.OldID), parent: int32(m.OldParent), dev: m.Dev, point: unique.Make(m.Point)}
}

// info is the mount as a detach note tells it: as its namespace's table
// showed it.
func (m watchedMount) info() *mountinfo.Info {
	return &mountinfo.Info{ID: int(m.id), Parent: int(m.parent), Major: int(m.dev.Major()), Minor: int(m.dev.Minor()),
		Mountpoint: m.point.Value()}
}

// mountSet is one watched namespace's mounts, sorted by unique id. The
// kernel hands unique ids out in increasing order, so an attach appends,
// and the detach of a mount made lately (a storm's) moves the few after
// it: a map cost three times the memory (90,000 entries: 11 MB of the
// daemon's 29 MB live heap, with the index of which namespace each id is
// in).
type mountSet []watchedMount

// newMountSet is the set of the mounts a listing gave.
func newMountSet(table []kmount.Mount) mountSet {
	s := make(mountSet, 0, len(table))
	for _, m := range table {
		s = append(s, watchedOf(m))
	}
	slices.SortFunc(s, func(a, b watchedMount) int { return cmp.Compare(a.uid, b.uid) })
	return slices.CompactFunc(s, func(a, b watchedMount) bool { return a.uid == b.uid })
}

// find is the index of the mount of unique id uid, and whether it is in s.
func (s mountSet) find(uid uint64) (int, bool) {
	return slices.BinarySearchFunc(s, uid, func(m watchedMount, uid uint64) int { return cmp.Compare(m.uid, uid) })
}

// has reports whether the mount of unique id uid is in s.
func (s mountSet) has(uid uint64) bool {
	_, ok := s.find(uid)
	return ok
}

// put adds m, or replaces what s knew of its unique id.
func (s *mountSet) put(m watchedMount) {
	if n := len(*s); n == 0 || (*s)[n-1].uid < m.uid {
		*s = append(*s, m)
		return
	}
	i, ok := s.find(m.uid)
	if ok {
		(*s)[i] = m
		return
	}
	*s = slices.Insert(*s, i, m)
}

// remove takes the mount of unique id uid out of s and returns it.
func (s *mountSet) remove(uid uint64) (watchedMount, bool) {
	i, ok := s.find(uid)
	if !ok {
		return watchedMount{}, false
	}
	m := (*s)[i]
	*s = slices.Delete(*s, i, i+1)
	return m, true
}
