package correlate

import "github.com/mntleak/mntleak/event"

// copiedFrom returns the namespaces an unmount's caller got its copy of
// the object from: a namespace made during tracing that did not mount the
// object itself since it was made had its table copied from its parent,
// which, if it too was made during tracing and did not mount it since,
// had it from its own parent, and so on. mounted is the object's latest
// mount event (nil: tracing saw none). The result is empty when the
// caller predates tracing or mounted the object itself.
func (c *Correlator) copiedFrom(caller uint32, mounted *event.Event) map[uint32]bool {
	origin := map[uint32]bool{}
	n := c.lineage.Get(caller)
	for n != nil && !n.Created.IsZero() && n.Parent != 0 && !origin[n.Parent] {
		if mounted != nil && mounted.MntNS == n.Ino && mounted.Time.After(n.Created) {
			break // its own mount: not a copy of its parent's
		}
		origin[n.Parent] = true
		n = c.lineage.Get(n.Parent)
	}
	return origin
}

// originKeeps reports whether a namespace the caller's copy came from
// (copiedFrom, its table read fresh) still has the object mounted: the
// caller then unmounted a copy of its own (a test's umount -R in its
// private copy of the node's namespace, a service cleaning its private
// mounts), which tears nothing down, and no copy elsewhere is left
// behind by it: whatever other namespaces have, they have from that one.
func (c *Correlator) originKeeps(id identity, caller uint32, origin map[uint32]bool) bool {
	if len(origin) == 0 {
		return false
	}
	for _, m := range c.search(id, caller, 0) {
		if origin[m.ns.Ino] && !m.self && m.mount != nil && m.exited.IsZero() {
			return true
		}
	}
	return false
}
