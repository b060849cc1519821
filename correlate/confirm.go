package correlate

import (
	"maps"
	"slices"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// confirmLeak builds the finding of a pending leak as it stands now, if it
// still holds (nil if not):
// the holder namespaces' tables are read again (reread; a leak reported at
// once has just read them), and a copy counts when it is still mounted, or
// when the kernel detached it and a process still keeps it busy. The
// finding is built then, with the processes that pin each copy, so the
// process it names (holder_pid) is the one whose cwd, root, file or mapping
// lies in the copy, and a namespace member only when nothing pins it.
// With failed (a failure hit the object), a leak whose holders are all gone
// by now is reported as it was found: the copy stayed, and it is what the
// failure's processes reached the object through.
func (c *Correlator) confirmLeak(p *pendingLeak, reread, failed bool) *leakRecord {
	holders := map[uint32]bool{}
	for _, m := range p.matches {
		holders[m.ns.Ino] = true
	}
	c.addCopiedSince(p, holders)
	missing := append([]string(nil), p.missing...)
	if reread {
		missing = append(missing, c.refreshTables(func(n *Namespace) bool { return holders[n.Ino] }, true)...)
		c.rereadCompared(p)
	}
	var still []match
	for _, m := range c.search(p.id, p.ev.MntNS, 0) {
		if !m.self && m.exited.IsZero() && holders[m.ns.Ino] {
			still = append(still, m)
		}
	}
	if !reread {
		still = append(still, detachedOnly(p.matches)...)
	}
	still = append(still, c.mountedElsewhere(p, still)...)
	found, pinErr := c.pinsFor(p.id, still, 0)
	pins := map[uint32][]finding.PinRef{}
	for ns, refs := range found {
		if holders[ns] {
			pins[ns] = refs
		}
	}
	// A copy the kernel detached is still a leak while a process keeps it
	// busy: it is named as detached, with that process.
	for _, m := range p.matches {
		if !hasMatchIn(still, m.ns.Ino) && len(pins[m.ns.Ino]) > 0 {
			m.detached = true
			still = append(still, m)
		}
	}
	elsewhere := c.pinsOfCopiesInNoTable(p, found, holders, still)
	for ns, refs := range elsewhere {
		pins[ns] = refs
	}
	if len(still) == 0 && (failed || len(elsewhere) > 0) {
		for _, m := range p.matches {
			if m.ns.Dead {
				m.exited = m.ns.Died // its pids may be other programs' now
			}
			still = append(still, m)
		}
	}
	if len(still) == 0 {
		p.unsure = len(missing) > len(p.missing)
		return nil
	}
	a := &analysis{trigger: p.ev, leak: true, caller: p.ev.MntNS, id: p.id, pins: pins}
	f := c.finding(finding.KindLeak, p.ev, p.obj, a, still)
	f.Missing = append(f.Missing, missing...)
	if pinErr != nil {
		f.Missing = append(f.Missing, "the processes that pin it: "+pinErr.Error())
	}
	rec := &leakRecord{id: p.id, holders: map[uint32]bool{}, finding: f}
	for _, m := range still {
		if !rec.holders[m.ns.Ino] {
			rec.holders[m.ns.Ino] = true
			rec.namespaces = append(rec.namespaces, m.ns)
		}
	}
	return rec
}

// addCopiedSince adds to holders the namespaces made from one of them
// after the unmount (a member's main thread unshared again, a CLONE_NEWNS
// child), and from those, and so on: each copied its parent's table, the
// leaked copy included, so it holds the copy too, and it alone once the
// namespace it left has no process any more.
func (c *Correlator) addCopiedSince(p *pendingLeak, holders map[uint32]bool) {
	live := c.lineage.Live()
	for added := true; added; {
		added = false
		for _, n := range live {
			if !holders[n.Ino] && holders[n.Parent] && n.Created.After(p.ev.Time) {
				holders[n.Ino], added = true, true
			}
		}
	}
}

// rereadCompared reads again, when stale, the tables a leak's holders are
// compared with: the unmounting namespace's (last read before its
// unmount, on a machine where nothing else had it read again before the
// leak settled, it still shows what it unmounted) and the holders'
// parents'. On the stale table, a holder's own bind of its copy to a
// directory of its own looked like a bind of the node's path made before
// tracing began ([cause: rprivate-bind]). One that cannot be read again
// is taken as it was (a recording made before this read has no answer).
func (c *Correlator) rereadCompared(p *pendingLeak) {
	compared := map[uint32]bool{p.ev.MntNS: true}
	for _, m := range p.matches {
		compared[m.ns.Parent] = true
	}
	for _, ino := range slices.Sorted(maps.Keys(compared)) { // in order: a read is a recorded answer
		if n := c.lineage.Get(ino); n != nil && !c.ledger.Fresh(ino) && !n.keptOnly() {
			_ = c.readTable(n)
		}
	}
}

// pinsOfCopiesInNoTable returns the pins, by processes outside the holder
// namespaces, of a copy no mount table shows: a holder's copy is gone from
// its table (detached, or gone with its namespace) and no namespace's table
// has a mount of the device (the object, or another filesystem that got
// its freed number), so a process that still has a file, cwd, root or
// mapping on it (a file opened through /proc/HOLDER/root before the holder
// exited) reaches it through that copy, wherever the process runs. An open
// of the device itself (blockdev-fd) is no copy's.
func (c *Correlator) pinsOfCopiesInNoTable(p *pendingLeak, found map[uint32][]finding.PinRef, holders map[uint32]bool, still []match) map[uint32][]finding.PinRef {
	gone := false
	for _, m := range p.matches {
		gone = gone || !hasMatchIn(still, m.ns.Ino)
	}
	if !gone || p.id.dev == 0 || c.deviceMounted(p.id.dev) {
		return nil
	}
	out := map[uint32][]finding.PinRef{}
	for _, ns := range slices.Sorted(maps.Keys(found)) { // in order: a read is a recorded answer
		refs := found[ns]
		if holders[ns] || c.mountedWherePinned(ns, p.id.dev) {
			continue
		}
		for _, r := range refs {
			if r.Pin != string(procfs.PinBlockFD) {
				out[ns] = append(out[ns], r)
			}
		}
	}
	return out
}

// mountedWherePinned reports whether namespace ns, whose processes pin
// dev, has dev mounted now, its table read again when stale (a new mount
// there since it was read: the kernel gives a freed anonymous number,
// tmpfs's, to the next filesystem at once). The pins are then that
// mount's, not a detached copy's. A namespace the lineage does not know
// is taken as having none.
func (c *Correlator) mountedWherePinned(ns uint32, dev event.Dev) bool {
	if n := c.lineage.Get(ns); n != nil && !n.keptOnly() {
		if !c.ledger.Fresh(ns) {
			_ = c.readTable(n)
		}
		if t := c.ledger.Table(ns); t != nil {
			return tableHasDev(t, dev)
		}
	}
	return false
}

// deviceMounted reports whether the latest table of a live namespace has a
// mount of dev. A table read before a mount event since (the unmount that
// made the leak, on a machine where nothing else happened to have it read
// again before the teardown settled) is read again first: a stale one would
// show the filesystem the namespace no longer has. One that cannot be read
// again is taken as it was.
func (c *Correlator) deviceMounted(dev event.Dev) bool {
	tables := c.tables()
	for _, ns := range slices.Sorted(maps.Keys(tables)) { // in order: a read is a recorded answer
		t := tables[ns]
		if !tableHasDev(t, dev) {
			continue
		}
		n := c.lineage.Get(t.NS)
		if c.ledger.Fresh(t.NS) || n == nil || n.keptOnly() || c.readTable(n) != nil {
			return true
		}
		if fresh := c.ledger.Table(t.NS); fresh == nil || tableHasDev(fresh, dev) {
			return true
		}
	}
	return false
}

// tableHasDev reports whether t has a mount of dev.
func tableHasDev(t *Table, dev event.Dev) bool {
	for _, m := range t.Mounts {
		if devOf(m) == dev {
			return true
		}
	}
	return false
}

// detachedOnly returns the matches that are copies the kernel detached
// (seen in the tables read before the unmount, gone from those after).
func detachedOnly(ms []match) []match {
	var out []match
	for _, m := range ms {
		if m.detached {
			out = append(out, m)
		}
	}
	return out
}

// mountedElsewhere finds the filesystem of a pending leak still mounted at
// another path of a holder namespace whose copy at the unmounted path is
// gone (the holder bound the volume to a directory of its own before the
// teardown; the rmdir after the unmount detached the copy at the original
// path, not the filesystem). A leak is the filesystem, judged across every
// mount of it in that namespace: a mount counts when the table the copy
// was found in had it too, with the same id and device, so it is the same
// superblock even on an anonymous device (tmpfs) whose number is reused
// once freed. Only a whole filesystem (root "/") that is not the
// namespace's root device: a bind of one directory shares the device with
// every other directory of it.
func (c *Correlator) mountedElsewhere(p *pendingLeak, still []match) []match {
	if p.id.dev == 0 || (p.id.root != "/" && !p.id.block) {
		return nil
	}
	var out []match
	for _, m := range p.matches {
		fresh := c.ledger.Table(m.ns.Ino)
		if m.table == nil || fresh == nil || m.ns.Dead || hasMatchIn(still, m.ns.Ino) || hasMatchIn(out, m.ns.Ino) {
			continue
		}
		if root := fresh.At("/"); root != nil && devOf(root) == p.id.dev {
			continue
		}
		var same []*procfs.Mount
		for _, x := range fresh.Mounts {
			if devOf(x) == p.id.dev && x.Mountpoint != "/" && sameMountIn(m.table, x) {
				same = append(same, x)
			}
		}
		for _, x := range outermost(fresh, same) {
			out = append(out, match{ns: m.ns, table: fresh, mount: x, where: x.Mountpoint})
		}
	}
	return out
}

// sameMountIn reports whether t has the mount x (the same id and device).
func sameMountIn(t *Table, x *procfs.Mount) bool {
	for _, m := range t.Mounts {
		if m.ID == x.ID && devOf(m) == devOf(x) {
			return true
		}
	}
	return false
}
