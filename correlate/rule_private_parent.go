package correlate

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// copiedAfterTheUnmount reports whether n, a holder of a leak, was made
// after the unmount (its creator's main thread unshared again, from a
// namespace that had kept its copy): no propagation could have reached
// it, whatever its parent's flags; its copy is a copy of that leak.
func copiedAfterTheUnmount(a *analysis, n *Namespace) bool {
	return a.leak && !n.Created.IsZero() && n.Created.After(a.trigger.Time)
}

// rulePrivateParent: the holder namespace copied the object's parent mount
// while it was private, so its copy never receives the unmount.
func (c *Correlator) rulePrivateParent(a *analysis, m match) (verdict, bool) {
	if m.self || m.mount == nil {
		return verdict{}, false
	}
	parent := m.table.Parent(m.mount)
	if parent == nil || !IsPrivate(parent) {
		return verdict{}, false
	}
	// Only the parent namespace's own propagation change counts, and only
	// from its present generation: every `unshare --propagation private`
	// on the node makes some / private, in its own new namespace.
	if m.ns.Parent == 0 || copiedAfterTheUnmount(a, m.ns) {
		return verdict{}, false
	}
	var since time.Time
	if p := c.lineage.Get(m.ns.Parent); p != nil {
		since = p.Created
	}
	var made *event.Event
	for _, ev := range c.ledger.History() {
		if ev.Ret < 0 || ev.MntNS != m.ns.Parent || ev.Time.Before(since) ||
			(!m.ns.Created.IsZero() && !ev.Time.Before(m.ns.Created)) {
			continue
		}
		if (ev.Kind == event.KindMount && hasFlags(ev, unix.MS_PRIVATE) && ev.Target == parent.Mountpoint) ||
			(ev.Kind == event.KindMountSetattr && ev.Propagation == unix.MS_PRIVATE && ev.Path == parent.Mountpoint) {
			made = ev
		}
	}
	if made == nil {
		return verdict{}, false
	}
	v := verdict{cause: finding.CausePrivateParent, inferred: m.ns.Event == nil}
	v.evidence = append(v.evidence, eventEvidence(made, "parent made private: "+eventSummary(made)))
	copied := "before tracing began"
	if m.ns.Event != nil {
		v.evidence = append(v.evidence, creationEvidence(m.ns, "copy taken: "))
		copied = "at " + finding.Clock(m.ns.Created) + " by " + finding.ProcName(m.ns.Creator.Comm, m.ns.Creator.PID)
	}
	v.evidence = append(v.evidence, factEvidence(mountFact(m.ns.Ino, parent)), factEvidence(mountFact(m.ns.Ino, m.mount)))
	v.summary = finding.ProcName(made.Comm, int(made.PID)) + " made " + parent.Mountpoint + " private at " + finding.Clock(made.Time) + "; " +
		finding.NSName(m.ns.Ino) + " was copied from it " + copied + ", so its copy of " + m.where + " receives no unmount" + c.stayed(a)
	v.fix = "keep " + parent.Mountpoint + " shared or slave (mount --make-rshared " + parent.Mountpoint +
		") before namespaces are copied from it; restart the processes of " + finding.NSName(m.ns.Ino) + " to release this copy"
	return v, true
}
