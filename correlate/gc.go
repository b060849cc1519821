package correlate

import (
	"sort"

	"github.com/mntleak/mntleak/event"
)

// The correlator's memory is bounded: dead namespaces, their last tables,
// mount tables, failure keys and leak records are all collected or capped.
// Collection runs on event time (every GCInterval), so it happens at the
// same point of a stream live and in a replay.

// collect runs a collection when GCInterval of event time has passed.
func (c *Correlator) collect() {
	if c.now.Sub(c.lastGC) < c.opts.GCInterval {
		return
	}
	if c.lastGC.IsZero() {
		c.lastGC = c.now // the first interval starts with the first event
		return
	}
	c.lastGC = c.now
	// A namespace a bind of its nsfs file keeps is alive with no process
	// (pinned also while processes are in it: it outlives them).
	var kept []uint32
	for _, b := range c.nsfsBinds() {
		kept = append(kept, b.kept)
	}
	c.lineage.Pin(kept, c.now)
	// Members are known from events and snapshots only; a namespace whose
	// known members all exited may be empty (its mounts gone with it) or
	// still hold children mntleak never saw fork. /proc tells.
	if c.lineage.hasEmpty() {
		_ = c.scan()
	}
	c.lineage.expire(c.now)
	c.lineage.capDead(c.opts.MaxDead)
	// A dead namespace's last table serves the search for holders that
	// exited within ExitGrace of a failure, and says where the mounts it
	// made into a shared peer group lay while they are in the ledger's
	// history (shared-propagation cites them however long after it went).
	var made map[uint32][]*event.Event
	for _, n := range c.lineage.dead {
		if n.LastTable != nil && c.now.Sub(n.Died) > c.opts.ExitGrace {
			if made == nil {
				made = c.mountsByNamespace()
			}
			if !publishedFrom(n.LastTable, made[n.Ino]) {
				n.LastTable = nil
			}
		}
	}
	c.capTables()
	c.capLeaks()
	for k, t := range c.incidents {
		if c.now.Sub(t) > c.opts.RetryWindow {
			delete(c.incidents, k)
		}
	}
}

// capTables keeps the mounts held in tables under MaxMounts. Previous
// tables go first, then the current tables of namespaces least recently
// read, but never a holder of an open leak (the evidence a later failure
// on that object needs) nor the host's. An evicted table is not lost
// knowledge: it is re-read from /proc the next time it is needed.
func (c *Correlator) capTables() {
	total := c.ledger.Mounts()
	if total <= c.opts.MaxMounts {
		return
	}
	keep := map[uint32]bool{c.hostNS: true}
	for _, rec := range c.leaks {
		for _, n := range rec.namespaces {
			if !n.Dead {
				keep[n.Ino] = true
			}
		}
	}
	for _, ns := range c.ledger.namespaces() {
		if total <= c.opts.MaxMounts {
			return
		}
		if t := c.ledger.last[ns]; t != nil {
			total -= len(t.Mounts)
			delete(c.ledger.last, ns)
		}
	}
	tables := make([]*Table, 0, len(c.ledger.tables))
	for ns, t := range c.ledger.tables {
		if !keep[ns] {
			tables = append(tables, t)
		}
	}
	sort.Slice(tables, func(i, j int) bool {
		if !tables[i].ReadAt.Equal(tables[j].ReadAt) {
			return tables[i].ReadAt.Before(tables[j].ReadAt)
		}
		return tables[i].NS < tables[j].NS
	})
	for _, t := range tables {
		if total <= c.opts.MaxMounts {
			break
		}
		total -= len(t.Mounts)
		c.ledger.Forget(t.NS)
		c.evicted++
	}
}

// capLeaks keeps at most maxLeaks leak records, dropping closed leaks
// (every holder namespace gone) before open ones, oldest first.
func (c *Correlator) capLeaks() {
	if len(c.leaks) <= maxLeaks {
		return
	}
	open := func(rec *leakRecord) bool {
		for _, n := range rec.namespaces {
			if !n.Dead {
				return true
			}
		}
		return false
	}
	drop := len(c.leaks) - maxLeaks
	kept := c.leaks[:0]
	for _, rec := range c.leaks {
		if drop > 0 && !open(rec) {
			drop--
			continue
		}
		kept = append(kept, rec)
	}
	c.leaks = kept[min(drop, len(kept)):]
}

// Size is how much state the correlator holds, for metrics and soak checks.
type Size struct {
	Live, Dead, Mounts, History, Leaks, Incidents int
	Evicted                                       uint64 // tables evicted by the mount cap, so far
}

// Size reports the correlator's state.
func (c *Correlator) Size() Size {
	return Size{
		Live: len(c.lineage.live), Dead: len(c.lineage.dead), Mounts: c.ledger.Mounts(),
		History: len(c.ledger.history), Leaks: len(c.leaks), Incidents: len(c.incidents), Evicted: c.evicted,
	}
}

// Mounts counts the mounts held in current and previous tables.
func (l *Ledger) Mounts() int {
	n := 0
	for _, t := range l.tables {
		n += len(t.Mounts)
	}
	for _, t := range l.last {
		n += len(t.Mounts)
	}
	return n
}

// namespaces lists the namespaces with a table, in order.
func (l *Ledger) namespaces() []uint32 {
	out := make([]uint32, 0, len(l.tables))
	for ns := range l.tables {
		out = append(out, ns)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}
