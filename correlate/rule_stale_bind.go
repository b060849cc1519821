package correlate

import (
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// staleBind explains mount/move_mount ENOENT when the source is a bind
// whose file was deleted (the subPath of an updated ConfigMap): the bind
// stays, but nothing can be bound from it any more. Not a leak.
func (c *Correlator) staleBind(ev *event.Event) {
	src := ev.Source
	if ev.Kind == event.KindMoveMount {
		src = ev.FromPath
	}
	if src == "" {
		return
	}
	// The caller's namespace, and the one it was copied from: runc's init
	// fails and exits, and its namespace may be gone before /proc is read.
	scope := []uint32{ev.MntNS}
	if n := c.lineage.Get(ev.MntNS); n != nil && n.Parent != 0 {
		scope = append(scope, n.Parent)
	}
	// Forced: deleting the bind's source changes mountinfo (//deleted)
	// without any mount event. But only of a mount at the source: a table
	// read after the last mount change that has none there needs no
	// re-read (runc's ENOENTs from missing mount sources, many per
	// container, then cost nothing).
	need := func(n *Namespace) bool {
		if n.Ino != scope[0] && n.Ino != scope[len(scope)-1] {
			return false
		}
		t := c.ledger.Table(n.Ino)
		return t == nil || !c.ledger.Fresh(n.Ino) || t.At(src) != nil
	}
	var missing []string
	for _, ns := range scope {
		if n := c.lineage.Get(ns); n != nil && need(n) {
			missing = c.refreshTables(need, true)
			break
		}
	}
	var m *procfs.Mount
	var holderNS uint32
	for _, ns := range scope {
		if t := c.ledger.Table(ns); t != nil && c.lineage.Get(ns) != nil {
			if x := t.At(src); x != nil && strings.HasSuffix(x.Root, "//deleted") {
				m, holderNS = x, ns
				break
			}
		}
	}
	if m == nil {
		return
	}
	if holderNS != ev.MntNS {
		missing = nil // the caller's namespace was gone, its parent answered
	}
	a := &analysis{trigger: ev, caller: ev.MntNS}
	v := c.classify(a, match{ns: c.lineage.Get(holderNS), table: c.ledger.Table(holderNS), mount: m, where: src, self: holderNS == ev.MntNS})
	f := &finding.Finding{
		Kind: finding.KindFailure, Time: ev.Time, Call: c.callOf(ev),
		Object:  finding.Object{Path: firstNonEmpty(ev.Target, ev.ToPath), Source: src, Dev: devOf(m), FSType: m.FSType, Root: m.Root},
		Holders: []finding.Holder{{MntNS: holderNS, Self: holderNS == ev.MntNS, Where: src, MountID: m.ID, Propagation: Propagation(m)}},
		Cause:   v.cause, Summary: v.summary, Fix: v.fix, Inferred: v.inferred,
		Missing: append(missing, v.missing...),
	}
	f.Evidence = append([]finding.Evidence{eventEvidence(ev, "the call: "+eventSummary(ev))}, v.evidence...)
	c.fillBirthIDs(f)
	c.report(f)
}

// ruleStaleBind: a mount or move_mount failed with ENOENT because its
// source is a bind whose file was deleted (mountinfo: //deleted).
func (c *Correlator) ruleStaleBind(a *analysis, m match) (verdict, bool) {
	ev := a.trigger
	if (ev.Kind != event.KindMount && ev.Kind != event.KindMoveMount) || !failedWith(ev, unix.ENOENT) ||
		m.mount == nil || !strings.HasSuffix(m.mount.Root, "//deleted") {
		return verdict{}, false
	}
	v := verdict{}
	bound := ""
	if b := c.bindOnto(m.where, ev.Time); b != nil {
		v.evidence = append(v.evidence, eventEvidence(b, "the stale bind: "+eventSummary(b)))
		bound = "; bound by " + finding.ProcName(b.Comm, int(b.PID)) + " at " + finding.Clock(b.Time) + " from " + b.Source
	} else {
		v.inferred = true
	}
	v.evidence = append(v.evidence, factEvidence(mountFact(m.ns.Ino, m.mount)+": its source was deleted"))
	v.summary = "not a leak: the source " + m.where + " is a bind of " + strings.TrimSuffix(m.mount.Root, "//deleted") +
		", which has since been deleted (mountinfo: //deleted)" + bound
	v.fix = "unmount the stale bind " + m.where + " and bind the current file again (kubelet does so since Kubernetes 1.20, PR 89629); " +
		"for ConfigMaps and Secrets prefer mounting the whole volume over subPath"
	return v, true
}

// bindOnto returns the last successful bind mount onto target before t.
func (c *Correlator) bindOnto(target string, before time.Time) *event.Event {
	hist := c.ledger.History()
	for i := len(hist) - 1; i >= 0; i-- {
		ev := hist[i]
		if ev.Kind == event.KindMount && ev.Ret == 0 && ev.Target == target && hasFlags(ev, unix.MS_BIND) &&
			!ev.Time.After(before) {
			return ev
		}
	}
	return nil
}
