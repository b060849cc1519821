package correlate

import "time"

// pendingLeak is a leak found at an unmount, reported once the teardown
// has settled if a copy is still there.
type pendingLeak struct {
	rec      *leakRecord
	caller   uint32
	deadline time.Time
}

// settleLeaks confirms the pending leaks whose teardown has settled (their
// deadline passed, in event time), or all of them (Flush, at the end). A
// failure on the object of a pending leak reports it at once (failed): the
// failure shows the object is held, and the leak is what explains it.
func (c *Correlator) settleLeaks(failed func(identity) bool, all bool) {
	if len(c.pending) == 0 {
		return
	}
	var keep []*pendingLeak
	for _, p := range c.pending {
		switch {
		case failed != nil && failed(p.rec.id):
			c.keepLeak(p.rec)
		case all || !c.now.Before(p.deadline):
			if c.stillHeld(p) {
				c.keepLeak(p.rec)
			}
		default:
			keep = append(keep, p)
		}
	}
	c.pending = keep
}

// Flush reports the leaks still waiting for their teardown to settle, as
// they stand now: call it when the events end (the daemon stops, a replay
// reaches the end of its recording).
func (c *Correlator) Flush() { c.settleLeaks(nil, true) }

// sameObject reports whether two identities are the same object (as a
// failure and an earlier leak are matched).
func sameObject(a, b identity) bool {
	return (a.known() && b.dev == a.dev && (a.block || b.root == a.root)) || (a.path != "" && b.path == a.path)
}

// stillHeld re-reads the holder namespaces and reports whether any of them
// still has a copy of the object, or keeps a detached one busy; the
// finding's holders are narrowed to those.
func (c *Correlator) stillHeld(p *pendingLeak) bool {
	rec := p.rec
	holder := func(n *Namespace) bool { return rec.holders[n.Ino] }
	c.refreshTables(holder, true)
	still := map[uint32]bool{}
	for _, m := range c.search(rec.id, p.caller, 0) {
		if !m.self && rec.holders[m.ns.Ino] {
			still[m.ns.Ino] = true
		}
	}
	if len(still) < len(rec.holders) {
		// A copy the kernel detached is still a leak while a process
		// keeps it busy. The pins found count even when some processes
		// could not be read (the error then says how many): there is
		// always one here, even for root.
		pins, _ := c.pinsFor(rec.id, nil, 0)
		for ns := range pins {
			if rec.holders[ns] {
				still[ns] = true
			}
		}
	}
	if len(still) == 0 {
		return false
	}
	f := rec.finding
	kept := f.Holders[:0]
	for _, h := range f.Holders {
		if still[h.MntNS] {
			kept = append(kept, h)
		}
	}
	f.Holders = kept
	return true
}
