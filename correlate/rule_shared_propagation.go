package correlate

import (
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// ruleSharedPropagation: the blocking mount was made in another namespace and
// reached this one through a shared peer group.
func (c *Correlator) ruleSharedPropagation(a *analysis, m match) (verdict, bool) {
	if !m.self || m.mount == nil || (!IsShared(m.mount) && !IsSlave(m.mount)) {
		return verdict{}, false
	}
	callerTable := c.ledger.Table(a.caller)
	hist := c.ledger.History()
	for i := len(hist) - 1; i >= 0; i-- {
		ev := hist[i]
		if ev.Kind != event.KindMount || ev.Ret != 0 || ev.MntNS == a.caller || hasFlags(ev, unix.MS_REMOUNT) ||
			ev.Flags&(unix.MS_PRIVATE|unix.MS_SLAVE|unix.MS_SHARED) != 0 {
			continue
		}
		from := c.ledger.Lived(ev.MntNS) // torn down since: where it mounted is what it showed before
		if from == nil {
			from = c.lastTableOf(ev.MntNS) // gone since: where it mounted is in its last table
		}
		found := false
		for _, p := range translate(ev.Target, from, callerTable) {
			found = found || p == m.where
		}
		if !found {
			continue
		}
		v := verdict{cause: finding.CauseSharedPropagation, made: ev}
		v.evidence = append(v.evidence, eventEvidence(ev, "mounted elsewhere: "+eventSummary(ev)),
			factEvidence(mountFact(a.caller, m.mount)+": in a shared peer group with "+finding.NSName(ev.MntNS)))
		v.summary = actorName(ev) + " in " + finding.NSName(ev.MntNS) + " mounted " + ev.Target + " at " + finding.Clock(ev.Time) +
			"; it propagated to " + m.where + " here through the shared peer group (" + Propagation(m.mount) + ": Bidirectional / rshared)"
		n := c.lineage.Get(ev.MntNS)
		if n == nil {
			// Nothing runs there any more: the copy here is all that is left.
			v.summary += "; " + finding.NSName(ev.MntNS) + " is gone since"
			where := m.where
			if callerTable != nil && callerTable.At(a.id.path) != nil {
				where = a.id.path // the path that failed, where it shows here too
			}
			mounter := finding.NSName(ev.MntNS)
			if w := workloadWords(ev.Cgroup); w != "" {
				mounter += " (" + w + ")"
			}
			v.fix = "umount " + where + " here: " + mounter + ", which mounted it, is gone and cannot clean it up; " +
				"the container that publishes mounts (mountPropagation Bidirectional) must unmount them before it exits"
			return v, true
		}
		if n.Event != nil {
			v.evidence = append(v.evidence, creationEvidence(n, "namespace created: "))
		}
		// Entered through the process that made it, while it runs there,
		// else the namespace's oldest.
		pid := "PID"
		for i, mem := range n.Members() {
			if i == 0 || mem.PID == int(ev.PID) {
				pid = itoa(mem.PID)
			}
		}
		v.fix = "unmount it in " + finding.NSName(ev.MntNS) + " where it was mounted (nsenter -t " + pid + " -m umount " + ev.Target +
			"; the container must clean up its Bidirectional mounts), or use mountPropagation HostToContainer if the container need not publish mounts"
		return v, true
	}
	return verdict{}, false
}

// mountsByNamespace are the mounts in the ledger's history that worked,
// by the namespace that made them.
func (c *Correlator) mountsByNamespace() map[uint32][]*event.Event {
	out := map[uint32][]*event.Event{}
	for _, ev := range c.ledger.History() {
		if ev.Kind == event.KindMount && ev.Ret == 0 {
			out[ev.MntNS] = append(out[ev.MntNS], ev)
		}
	}
	return out
}

// publishedFrom reports whether one of mounts (made in the namespace
// whose last table t is) lay in a shared peer group there: a mount it
// published to its peers (a Bidirectional container's), which outlives it.
func publishedFrom(t *Table, mounts []*event.Event) bool {
	for _, ev := range mounts {
		if m := t.At(ev.Target); m != nil && IsShared(m) {
			return true
		}
	}
	return false
}

// lastTableOf returns the last mount table read of a namespace that is
// gone, its latest generation's, or nil.
func (c *Correlator) lastTableOf(ns uint32) *Table {
	if n := c.lineage.LastDead(ns, c.now.Add(-c.opts.Retention)); n != nil {
		return n.LastTable
	}
	return nil
}
