package correlate

import (
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"golang.org/x/sys/unix"
)

// mountflagsRestart: the caller runs in a namespace its daemon made by
// unshare after a restart, while survivors of the earlier generation keep
// the namespace the daemon made before (systemd MountFlags=slave with
// live-restore).
func (c *Correlator) mountflagsRestart(a *analysis, m match) (verdict, bool) {
	cur := c.lineage.Get(a.caller)
	old := m.ns
	if m.self || cur == nil || cur.Origin != OriginUnshare || cur.Ino == c.hostNS || old.Ino == c.hostNS {
		return verdict{}, false
	}
	daemon := c.runningAs(cur)
	sameDaemon := old.Creator.Comm == daemon
	for _, p := range old.Past() {
		sameDaemon = sameDaemon || p.Comm == daemon
	}
	if !sameDaemon || (!old.Created.IsZero() && !old.Created.Before(cur.Created)) {
		return verdict{}, false
	}
	v := verdict{cause: finding.CauseMountflagsRestart, inferred: old.Event == nil}
	first := "an earlier " + daemon + " made " + finding.NSName(old.Ino) + " before tracing began"
	if old.Event != nil {
		v.evidence = append(v.evidence, creationEvidence(old, "first generation: "))
		first = "the first " + finding.ProcName(old.Creator.Comm, old.Creator.PID) + " made " + finding.NSName(old.Ino) + " at " + finding.Clock(old.Created)
	}
	if cur.Event != nil {
		v.evidence = append(v.evidence, creationEvidence(cur, "after the restart: "))
	}
	rootProp := RootPropagation(m.table)
	v.evidence = append(v.evidence, factEvidence(finding.NSName(old.Ino)+" root propagation: "+rootProp), factEvidence(mountFact(old.Ino, m.mount)))
	var survivors []string
	for _, mem := range old.Members() {
		survivors = append(survivors, finding.ProcName(mem.Comm, mem.PID))
	}
	if len(survivors) > 0 {
		v.evidence = append(v.evidence, factEvidence("survivors in "+finding.NSName(old.Ino)+": "+strings.Join(survivors, ", ")))
	}
	unit := Unit(cur.Creator.Cgroup)
	v.summary = daemon + " was restarted into a new namespace: " + first + " (unshare, " + rootProp +
		" root: MountFlags=slave), the current " + finding.ProcName(cur.Creator.Comm, cur.Creator.PID) + " runs in " + finding.NSName(cur.Ino) +
		" since " + finding.Clock(cur.Created)
	if len(survivors) > 0 {
		verb := " survived the restart (live-restore) and keeps "
		if len(survivors) > 1 {
			verb = " survived the restart (live-restore) and keep "
		}
		v.summary += "; " + strings.Join(survivors, ", ") + verb + finding.NSName(old.Ino) + " alive with the mount"
	}
	v.summary += c.stayed(a)
	if unit == "" {
		unit = daemon + "'s unit"
	}
	v.fix = "remove MountFlags=slave from " + unit + " (it cannot work with live-restore); to free this mount now: nsenter -t " +
		firstSurvivorPID(old) + " -m umount " + m.where + ", or restart the survivors"
	return v, true
}

// runningAs is what the creator of n runs as now. A namespace made by a
// wrapper that then execs the daemon (unshare(1), systemd's "(dockerd)")
// keeps the wrapper's name until a process list shows the exec, which may
// not have been read yet when a failure comes: a creator still alive is
// asked for its executable (a recorded question, so replays agree).
func (c *Correlator) runningAs(n *Namespace) string {
	comm := n.Creator.Comm
	if n.creatorGone || n.Creator.PID == 0 {
		return comm
	}
	cmd, err := c.proc.Command(n.Creator.PID)
	if err != nil || cmd.Exe == "" {
		return comm
	}
	exe := path.Base(strings.TrimSuffix(cmd.Exe, " (deleted)"))
	if len(exe) > 15 { // comm is the first 15 bytes of the name
		exe = exe[:15]
	}
	return exe
}

func firstSurvivorPID(n *Namespace) string {
	if ms := n.Members(); len(ms) > 0 {
		return itoa(ms[0].PID)
	}
	return "<pid in " + finding.NSName(n.Ino) + ">"
}

// privateParent: the holder namespace copied the object's parent mount
// while it was private, so its copy never receives the unmount.
func (c *Correlator) privateParent(a *analysis, m match) (verdict, bool) {
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
	if m.ns.Parent == 0 {
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

// unshareRule: a private namespace keeps a copy; name its creator.
func (c *Correlator) unshareRule(a *analysis, m match) (verdict, bool) {
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
		creator := finding.ProcName(n.Creator.Comm, n.Creator.PID)
		who := "stop or restart " + creator + " and the processes in " + finding.NSName(n.Ino)
		_, inside := n.members[n.Creator.PID]
		if n.creatorGone || !inside {
			// Its pid may belong to another program now, or it runs
			// elsewhere (the parent of a CLONE_NEWNS child): name what
			// keeps the namespace instead.
			if n.creatorGone {
				how += "; it has exited since"
			}
			who = "stop or restart the processes in " + finding.NSName(n.Ino)
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
		v.fix = who + "; " + prevent
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
		fix:      "restart " + finding.ProcName(oldest.Comm, oldest.PID) + " and the other processes in " + finding.NSName(n.Ino) + " to release the copy",
	}, true
}

// unknownRule: a namespace holds a copy and nothing more is known; the
// verdict says what is missing.
func (c *Correlator) unknownRule(a *analysis, m match) (verdict, bool) {
	if m.kept != nil {
		v := c.keptVerdict(a, m)
		v.missing = []string{"who created " + finding.NSName(m.ns.Ino) + " (before tracing began)"}
		return v, true
	}
	n := m.ns
	prop := RootPropagation(m.table)
	return verdict{
		cause:    finding.CauseUnknown,
		summary:  finding.NSName(n.Ino) + " holds a copy (" + prop + " root)" + c.stayed(a),
		evidence: []finding.Evidence{factEvidence(mountFact(n.Ino, m.mount))},
		fix:      "nsenter into " + finding.NSName(n.Ino) + " and unmount " + m.where,
		missing:  []string{"how and by whom " + finding.NSName(n.Ino) + " was created", "any process in it"},
	}, true
}

// keptVerdict: a namespace no process runs in keeps its copy, itself kept
// alive by a bind of its nsfs file; unmounting that bind lets it go.
func (c *Correlator) keptVerdict(a *analysis, m match) verdict {
	n, k := m.ns, m.kept
	made := ""
	var ev []finding.Evidence
	if n.Event != nil {
		made = "; it was created by " + finding.ProcName(n.Creator.Comm, n.Creator.PID) + " at " + finding.Clock(n.Created) + ", which has exited since"
		ev = append(ev, creationEvidence(n, "namespace created: "))
	}
	if f := k.fd; f != nil {
		who := finding.ProcName(f.Comm, f.PID)
		ev = append(ev, factEvidence(who+" in "+finding.NSName(k.ns)+" has fd "+itoa(f.FD)+" open on "+finding.NSName(n.Ino)+"'s nsfs file"),
			factEvidence(mountFact(n.Ino, m.mount)))
		return verdict{
			cause: finding.CauseUnshare, inferred: n.Event == nil,
			summary: "no process runs in " + finding.NSName(n.Ino) + "; " + who + " holds it open (fd " + itoa(f.FD) + ") and keeps it, with its own copy (" +
				RootPropagation(m.table) + " root)" + made + c.stayed(a),
			evidence: ev,
			fix: "have " + who + " close fd " + itoa(f.FD) + ", or stop it (the namespace and its copy go with the last reference); or nsenter --mount=/proc/" +
				itoa(f.PID) + "/fd/" + itoa(f.FD) + " umount " + m.where,
		}
	}
	ev = append(ev, factEvidence(finding.NSName(k.ns)+": "+k.where+" is a bind of "+finding.NSName(n.Ino)+"'s nsfs file"),
		factEvidence(mountFact(n.Ino, m.mount)))
	return verdict{
		cause: finding.CauseUnshare, inferred: n.Event == nil,
		summary: "no process runs in " + finding.NSName(n.Ino) + "; the bind of its nsfs file at " + k.where + " in " + c.label(k.ns) +
			" keeps it, with its own copy (" + RootPropagation(m.table) + " root)" + made + c.stayed(a),
		evidence: ev,
		fix: "umount " + k.where + " in " + c.label(k.ns) + " (the namespace and its copy go with it; unshare --mount=FILE and " +
			"runtimes that pin namespaces leave such binds), or nsenter --mount=" + k.where + " umount " + m.where,
	}
}

// inUseRule: the object is mounted in the caller's own namespace.
func (c *Correlator) inUseRule(a *analysis, m match) (verdict, bool) {
	if !m.self {
		return verdict{}, false
	}
	pins := a.pins[m.ns.Ino]
	v := verdict{cause: finding.CauseInUse, evidence: []finding.Evidence{factEvidence(mountFact(m.ns.Ino, m.mount))}}
	if what, ok := callerInside(a.trigger, m); ok && failedWith(a.trigger, unix.EBUSY) {
		caller := finding.ProcName(a.trigger.Comm, int(a.trigger.PID))
		v.summary = "not a leak: " + caller + "'s own " + what + " is inside " + m.where +
			" (a shell that runs umount from there passes its cwd on)"
		v.evidence = append(v.evidence, factEvidence(caller+"'s "+what+" at the call: mount "+itoa(int(mountIDOf(a.trigger, what)))+", on or under "+m.where))
		v.fix = "cd out of " + m.where + " (the shell or script that ran " + a.trigger.Comm + " has its " + what + " there), then retry"
		return v, true
	}
	if len(pins) == 0 {
		v.summary = "not a leak: it is mounted in the caller's own namespace at " + m.where
		v.fix = "unmount " + m.where + " first"
		if a.trigger.Kind == event.KindUmount {
			v.summary = "not a leak: " + m.where + " is busy in the caller's own namespace"
			v.missing = []string{"no process with a cwd, fd or mapping on it was found (a kernel user such as a loop device or swap?)"}
			v.fix = "find what uses it (fuser -vm " + m.where + "), or unmount lazily"
		}
		return v, true
	}
	var who []string
	for _, p := range pins {
		who = append(who, finding.ProcName(p.Comm, p.PID)+" ("+p.Pin+" "+p.Path+")")
		v.evidence = append(v.evidence, factEvidence(finding.ProcName(p.Comm, p.PID)+" has its "+p.Pin+" at "+p.Path))
	}
	v.summary = "not a leak: in use in the caller's own namespace by " + strings.Join(who, ", ")
	v.fix = "stop those processes or move them off " + m.where + ", then retry"
	return v, true
}

// callerInside reports whether a busy umount2's caller had its cwd (or
// root) on the mount being unmounted or on one below it, from the mount
// ids the kernel recorded at the call.
func callerInside(ev *event.Event, m match) (string, bool) {
	if ev.Kind != event.KindUmount || m.mount == nil || m.table == nil {
		return "", false
	}
	for _, c := range []struct {
		what string
		id   int32
	}{{"cwd", ev.CwdMntID}, {"root", ev.RootMntID}} {
		if c.id != 0 && mountWithin(m.table, int(c.id), m.mount.ID) {
			return c.what, true
		}
	}
	return "", false
}

func mountIDOf(ev *event.Event, what string) int32 {
	if what == "root" {
		return ev.RootMntID
	}
	return ev.CwdMntID
}

// mountWithin reports whether mount id is ancestor or lies below it in t.
func mountWithin(t *Table, id, ancestor int) bool {
	for i := 0; i < 64 && id != 0; i++ {
		if id == ancestor {
			return true
		}
		m := t.mount(id)
		if m == nil || m.Parent == id {
			return false
		}
		id = m.Parent
	}
	return false
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
