package correlate

import (
	"slices"
	"strings"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// creatorWorkload is where a namespace's creator ran when it created it
// (its pod, container or unit, from the cgroup its creation event carried:
// named also once the creator and its pod are gone); "" when unknown.
func creatorWorkload(n *Namespace) string {
	if n.Event == nil || n.Creator.PID != int(n.Event.PID) {
		return ""
	}
	return workloadWords(n.Event.Cgroup)
}

// ruleUnshare: a private namespace keeps a copy; name its creator.
func (c *Correlator) ruleUnshare(a *analysis, m match) (verdict, bool) {
	n := m.ns
	if m.self || (n.Event == nil && n.Creator.PID == 0) {
		return verdict{}, false
	}
	if m.kept != nil {
		if n.Event == nil {
			return verdict{}, false // its oldest process is not its creator: none is left
		}
		return c.keptVerdict(a, m), true
	}
	prop := RootPropagation(m.table)
	if n.Event != nil {
		how := "unshare"
		if n.Origin == OriginClone {
			how = "a CLONE_NEWNS child"
		}
		if w := creatorWorkload(n); w != "" {
			how += " in " + w
		}
		if copiedAfterTheUnmount(a, n) {
			how += ", after the unmount, copying the copy " + c.label(n.Parent) + " had kept"
		}
		creator := n.Creator.Ref().Name()
		who := "stop or restart " + finding.ProcName(n.Creator.Comm, n.Creator.PID) + " and the processes in " + finding.NSName(n.Ino)
		_, inside := n.members[n.Creator.key()]
		if n.creatorGone || !inside {
			// Its pid may belong to another program now, or it runs
			// elsewhere (the parent of a CLONE_NEWNS child): name what
			// keeps the namespace instead.
			if n.creatorGone {
				how += "; it has exited since"
			}
			who = keepersFix(a, n)
		}
		v := verdict{
			cause: finding.CauseUnshare,
			summary: finding.NSName(n.Ino) + " was created by " + creator + " (" + how + ") at " + finding.Clock(n.Created) +
				" from " + c.label(n.Parent) + " and keeps its own copy (" + prop + " root)" + c.stayed(a),
			evidence: []finding.Evidence{creationEvidence(n, "namespace created: "), factEvidence(mountFact(n.Ino, m.mount))},
		}
		prevent, cut := c.prevention(a, m)
		if cut != nil {
			v.summary += "; " + finding.ProcName(cut.Comm, int(cut.PID)) + " made " + firstNonEmpty(cut.Target, cut.Path) + " private in it at " + finding.Clock(cut.Time)
			v.evidence = append(v.evidence, eventEvidence(cut, "made private there: "+eventSummary(cut)))
		}
		v.fix = who + threadEntry(n, m.where, a.pins[n.Ino]) + "; " + prevent
		return v, true
	}
	// Its creation was not seen: it is named by its oldest live process
	// (the one it was first seen with may have exited, its pid another's).
	ms := n.Members()
	if len(ms) == 0 {
		return verdict{}, false
	}
	oldest := ms[0].Ref()
	return verdict{
		cause:    finding.CauseUnshare,
		inferred: true,
		summary: finding.NSName(n.Ino) + " predates tracing; its oldest process is " + finding.ProcList([]finding.ProcRef{oldest}, 1) +
			" and it keeps its own copy (" + prop + " root)" + c.stayed(a),
		evidence: []finding.Evidence{factEvidence(mountFact(n.Ino, m.mount))},
		fix:      "restart " + finding.ProcName(oldest.Comm, oldest.PID) + " and the other processes in " + finding.NSName(n.Ino) + " to release the copy" + threadEntry(n, m.where, a.pins[n.Ino]),
	}, true
}

// keepersFix is what to stop when n's creator has exited or runs
// elsewhere: the processes in n, or, none left, what keeps its copy busy.
func keepersFix(a *analysis, n *Namespace) string {
	who := "stop or restart the processes in " + finding.NSName(n.Ino)
	pinners, count := pinnersOf(a)
	if len(n.Members()) == 0 && count > 0 {
		who = "nothing runs in " + finding.NSName(n.Ino) + " any more; " + pinners + " keep the copy busy: stop them or have them close it"
		if count == 1 {
			who = "nothing runs in " + finding.NSName(n.Ino) + " any more; " + pinners + " keeps the copy busy: stop it or have it close it"
		}
	}
	if n.Dead && count == 0 {
		who = "nothing runs in " + finding.NSName(n.Ino) + " any more: its copy was detached with it and goes once nothing uses it"
	}
	if ms := n.Members(); len(ms) > 0 {
		refs := make([]finding.ProcRef, 0, len(ms))
		for _, mm := range ms {
			refs = append(refs, mm.Ref())
		}
		verb := ", which keep "
		if len(refs) == 1 {
			verb = ", which keeps "
		}
		who = "stop or restart " + finding.ProcList(refs, 3) + verb + finding.NSName(n.Ino) + " now"
	}
	return who
}

// threadEntry is how to reach n's copy when a thread of its own keeps n
// (the first such member): through that thread, whose /proc/TID/ns/mnt is
// n, while /proc/PID/ns/mnt is its process's other namespace; "" when
// no thread member keeps n. When that thread works in the copy (its cwd
// or root there, among pins, n's), an unmount through it fails with EBUSY
// until it leaves: the fix says so and what frees the copy instead.
func threadEntry(n *Namespace, where string, pins []finding.PinRef) string {
	for _, m := range n.Members() {
		if m.TID == 0 {
			continue
		}
		tid, pid := itoa(m.TID), itoa(m.PID)
		enter := "nsenter -t " + tid + " -m umount " + where
		for _, p := range pins {
			if p.PID == m.PID && p.TID == m.TID && (p.Pin == string(procfs.PinCwd) || p.Pin == string(procfs.PinRoot)) {
				who := finding.ProcName(m.Comm, m.PID)
				return "; " + who + " thread " + tid + " has its " + p.Pin + " in the copy (" + p.How() + "): unmounting it through that thread (" +
					enter + ") fails with EBUSY until it leaves; the copy goes when " + who + " stops or that thread leaves " + where
			}
		}
		return "; or unmount the copy through that thread, the one in " + finding.NSName(n.Ino) + ": " + enter +
			" (nsenter -t " + pid + " would enter its main thread's namespace)"
	}
	return ""
}

// pinnersOf names the processes that pin the object, in every namespace
// (up to three, then how many more): "reader[2737] (fd /file)", and how
// many there are.
func pinnersOf(a *analysis) (string, int) {
	var nss []uint32
	for ns := range a.pins {
		nss = append(nss, ns)
	}
	slices.Sort(nss)
	var names []string
	total := 0
	for _, ns := range nss {
		for _, p := range a.pins[ns] {
			total++
			if len(names) < 3 {
				names = append(names, finding.ProcName(p.Comm, p.PID)+" ("+p.Pin+" "+p.Path+")")
			}
		}
	}
	if total > len(names) {
		names = append(names, "+"+itoa(total-len(names))+" more")
	}
	return strings.Join(names, ", "), total
}
