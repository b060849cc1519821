package correlate

import (
	"cmp"
	"fmt"
	"maps"
	"slices"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// The kernel gives a freed namespace inode out again at once, and the
// process list is read at the time it is read, ahead of the events the
// correlator has handled: on a busy node it can show a process in "mnt:[N]"
// that is another namespace than the one the lineage knows by N, whose
// creation is an event not read yet. The birth id (NS_GET_MNTNS_ID, never
// reused) tells them apart where the kernel has it.

// retireReplaced retires each namespace of the lineage whose inode the
// process list shows another namespace has now: the namespace it knew is
// gone (it died unseen, or its end is among the events still to read), and
// a dead generation is never revived for the stranger. Only inodes none of
// whose processes is a known member are asked (one ioctl each): a member
// is still in the namespace it joined.
func (c *Correlator) retireReplaced(procs []procfs.Process) {
	byNS := map[uint32][]procfs.Process{}
	for _, p := range procs {
		byNS[p.MntNS] = append(byNS[p.MntNS], p)
	}
	for _, ino := range slices.Sorted(maps.Keys(byNS)) {
		ps := byNS[ino]
		n := c.lineage.Get(ino)
		if n == nil {
			if dead := c.lineage.LastDead(ino, c.now.AddDate(-1, 0, 0)); dead != nil && !dead.replaced {
				if same, known := c.sameBirth(dead, ps); known && !same {
					dead.replaced = true
				}
			}
			continue
		}
		if hasKnownMember(n, ps) {
			continue
		}
		if same, known := c.sameBirth(n, ps); known && !same {
			n.replaced = true
			died := n.lastExit
			if died.IsZero() {
				died = c.now
			}
			c.lineage.retire(n, died)
		}
	}
}

// hasKnownMember reports whether one of ps is a member n knows (the same
// pid and, where both are known, start time).
func hasKnownMember(n *Namespace, ps []procfs.Process) bool {
	for _, p := range ps {
		if m := n.members[p.PID]; m != nil && (m.StartTime == 0 || m.StartTime == p.StartTime) {
			return true
		}
	}
	return false
}

// sameBirth reports whether the namespace under n's inode now is the one
// n remembers, by the birth id read through one of its processes, and
// whether that could be told at all.
func (c *Correlator) sameBirth(n *Namespace, ps []procfs.Process) (same, known bool) {
	if n.ID == 0 {
		return false, false
	}
	for i, p := range ps {
		if i == 3 {
			break
		}
		if ino, id, err := c.proc.MntNSID(p.PID); err == nil && ino == n.Ino && id != 0 {
			return id == n.ID, true
		}
	}
	return false, false
}

// fillBirthIDs names, for every holder of f still running whose birth id
// the lineage does not have (a namespace that predates tracing, one that
// only pins the object, a stale bind's), the id the kernel gives its
// namespace, read through one of its processes (a member or a pinner) that
// is in that namespace now; none when no process answers (a kernel without
// NS_GET_MNTNS_ID, a namespace no process runs in).
func (c *Correlator) fillBirthIDs(f *finding.Finding) {
	for i := range f.Holders {
		h := &f.Holders[i]
		if h.MntNSID != 0 || !h.Exited.IsZero() {
			continue
		}
		var pids []int
		if n := c.lineage.Get(h.MntNS); n != nil {
			if n.ID != 0 {
				h.MntNSID = n.ID
				continue
			}
			for _, m := range n.Members() {
				pids = append(pids, m.Enter())
			}
		}
		for _, p := range h.Processes {
			pids = append(pids, cmp.Or(p.TID, p.PID))
		}
		for _, p := range h.Pins {
			pids = append(pids, p.PID)
		}
		h.MntNSID = c.liveBirthID(h.MntNS, pids)
	}
}

// liveBirthID is the birth id of namespace ino read through the first of
// (at most three of) pids that is in it now; 0 when none answers.
func (c *Correlator) liveBirthID(ino uint32, pids []int) uint64 {
	asked := 0
	for _, pid := range pids {
		if asked == 3 {
			break
		}
		asked++
		if got, id, err := c.proc.MntNSID(pid); err == nil && got == ino && id != 0 {
			return id
		}
	}
	return 0
}

// scan reads the process list and reconciles the lineage with it.
func (c *Correlator) scan() error {
	procs, err := c.processes()
	if err != nil {
		return err
	}
	c.reconcile(procs)
	c.lastScan, c.scanned, c.lostSinceScan = c.now, true, false
	return nil
}

// processes reads the process list; where the Proc tells what else it
// showed (procfs.ProcessLister), the lineage keeps the kernel's threads
// and the processes it could not read, for a pin search bounded by the
// processes it knows (pinCandidates).
func (c *Correlator) processes() ([]procfs.Process, error) {
	pl, ok := c.proc.(procfs.ProcessLister)
	if !ok {
		return c.proc.Processes()
	}
	l, err := pl.ProcessList()
	if err == nil {
		c.lineage.listed(l)
	}
	return l.Procs, err
}

// rescanFor reads the process list again when a namespace among the
// matches has no known process left (they exited, or it only has
// processes forked since the last list), or one known only from an event
// (its name is the one it had then: an unshare exec's its program after):
// the list says whether it is gone, who holds it and what they run. It
// reports whether it read one.
func (c *Correlator) rescanFor(matches []match) bool {
	if c.lastScan.Equal(c.now) && c.scanned {
		return false
	}
	for _, m := range matches {
		if !m.exited.IsZero() || m.ns.Dead {
			continue
		}
		stale := len(m.ns.members) == 0
		for _, mem := range m.ns.members {
			stale = stale || mem.StartTime == 0
		}
		if stale {
			return c.scan() == nil
		}
	}
	return false
}

// reconcile applies a process snapshot and keeps the last table of every
// namespace that died for the holders-that-just-exited search.
func (c *Correlator) reconcile(procs []procfs.Process) {
	before := map[uint32]*Namespace{}
	for _, n := range c.lineage.Live() {
		before[n.Ino] = n
	}
	c.retireReplaced(procs)
	c.lineage.Reconcile(procs, c.now)
	for ino, n := range before {
		if n.Dead && n.LastTable == nil {
			n.LastTable = c.ledger.Forget(ino)
		}
	}
}

// Start takes the startup snapshot: every process, and one mount table per
// namespace. Namespaces found here predate tracing and are marked inferred.
func (c *Correlator) Start() error {
	procs, err := c.processes()
	if err != nil {
		return err
	}
	if c.remembered {
		c.forgetReused(procs)
	}
	c.lineage.Seed(procs)
	c.scanned = true // as of the first event (lastScan is set by Handle)
	if c.hostNS, err = c.proc.HostNS(); err != nil {
		return fmt.Errorf("host mount namespace: %w", err)
	}
	c.readTables(c.lineage.Live()) // a namespace whose processes all exited is simply skipped
	return nil
}

// refresh re-reads the process list and every stale mount table (or, with
// force, every table only selects), as a failure or a leak check needs the
// present state. It returns what could not be read.
func (c *Correlator) refresh(only func(*Namespace) bool) []string {
	return c.refreshTables(only, false)
}

func (c *Correlator) refreshTables(only func(*Namespace) bool, force bool) []string {
	scanned := false
	if !c.scanned || c.now.Sub(c.lastScan) >= c.opts.ScanInterval {
		if err := c.scan(); err != nil {
			return []string{"process list: " + err.Error()}
		}
		scanned = true
	}
	var missing, retry, todo []*Namespace
	for _, n := range c.lineage.Live() {
		if (c.ledger.Fresh(n.Ino) && !force) || (only != nil && !only(n)) {
			continue
		}
		if n.keptOnly() {
			continue // no process to read it through: the search reads it through its bind
		}
		todo = append(todo, n)
	}
	for _, n := range c.readTables(todo) {
		if scanned {
			missing = append(missing, n)
		} else {
			retry = append(retry, n) // its known processes are gone: who else is there?
		}
	}
	if len(retry) > 0 {
		retry = c.placeByTasks(retry)
	}
	if len(retry) > 0 {
		if err := c.scan(); err != nil {
			return []string{"process list: " + err.Error()}
		}
		for _, n := range retry {
			if c.lineage.Get(n.Ino) == n {
				if err := c.readTable(n); err != nil {
					missing = append(missing, n)
				}
			}
		}
	}
	var out []string
	for _, n := range missing {
		out = append(out, "mount table of "+finding.NSName(n.Ino)+": no process of it could be read")
	}
	return out
}
