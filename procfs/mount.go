package procfs

import "github.com/moby/sys/mountinfo"

// A mount table is held for every mount namespace: on a node of 300
// namespaces of 300 mounts, 96,000 entries. As mountinfo.Info (4 ints and
// 7 strings) an entry was 144 bytes: 12 MB of a 19.5 MB live heap, twice
// that in resident memory once the collector's target doubles it. Yet a
// namespace is mostly a copy of another (every container's copy of the
// node's mounts): the copies of one mount differ only in their ids. Mount
// holds the ids and points at the rest, which the tables one reader reads
// share (shapes): 24 bytes an entry.

// Mount is one entry of a mount table: what mountinfo.Info holds, with
// the fields that copies of one mount in other namespaces share held once.
// The fields are mountinfo.Info's, in its order, so m.Mountpoint reads as
// it did and encoding/json writes the same object. Its shape is never nil
// (a field read would panic) and never changed once made: it may be
// another entry's too. NewMount makes one.
type Mount struct {
	ID, Parent int
	*MountShape
}

// MountShape is what copies of a mount share: everything but the ids.
type MountShape struct {
	Major, Minor int // the device

	Root, Mountpoint, Options, Optional, FSType, Source, VFSOptions string
}

// NewMount is the entry of mount id, child of parent, with a shape of its
// own.
func NewMount(id, parent int, shape MountShape) *Mount {
	return &Mount{ID: id, Parent: parent, MountShape: &shape}
}

// MountOf is what mountinfo (the library) says of a mount, as an entry.
func MountOf(m *mountinfo.Info) *Mount {
	return NewMount(m.ID, m.Parent, MountShape{Major: m.Major, Minor: m.Minor, Root: m.Root, Mountpoint: m.Mountpoint,
		Options: m.Options, Optional: m.Optional, FSType: m.FSType, Source: m.Source, VFSOptions: m.VFSOptions})
}

// MountsOf is MountOf of each of ms (nil for nil).
func MountsOf(ms []*mountinfo.Info) []*Mount {
	if ms == nil {
		return nil
	}
	out := make([]*Mount, len(ms))
	for i, m := range ms {
		out[i] = MountOf(m)
	}
	return out
}

// Equal reports whether m and o say the same of a mount: the same ids and
// equal shapes (two reads of one table make equal shapes at different
// addresses).
func (m *Mount) Equal(o *Mount) bool {
	return m.ID == o.ID && m.Parent == o.Parent && *m.MountShape == *o.MountShape
}

// maxShapes bounds the shapes one interner holds: past it, it starts
// again. The entries made keep their shapes; only the sharing with what
// it reads later is lost.
const maxShapes = 1 << 16

// shapes interns mount shapes: equal shapes it is given share one pointer.
// It is one reader's own (a parser's, one call's, a Replay's under its
// lock), never used by two goroutines at once.
type shapes struct {
	m map[MountShape]*MountShape
}

// of returns the canonical copy of shape.
func (s *shapes) of(shape MountShape) *MountShape {
	if p, ok := s.m[shape]; ok {
		return p
	}
	if s.m == nil || len(s.m) >= maxShapes {
		s.m = make(map[MountShape]*MountShape)
	}
	p := &shape
	s.m[shape] = p
	return p
}

// mount is the entry of mount id, child of parent, with shape's
// canonical copy.
func (s *shapes) mount(id, parent int, shape MountShape) *Mount {
	return &Mount{ID: id, Parent: parent, MountShape: s.of(shape)}
}
