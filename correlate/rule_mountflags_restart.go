package correlate

import (
	"path"
	"strings"

	"github.com/mntleak/mntleak/finding"
)

// ruleMountflagsRestart: the caller runs in a namespace its daemon made by
// unshare after a restart, while survivors of the earlier generation keep
// the namespace the daemon made before (systemd MountFlags=slave with
// live-restore).
func (c *Correlator) ruleMountflagsRestart(a *analysis, m match) (verdict, bool) {
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
		return itoa(ms[0].Enter())
	}
	return "<pid in " + finding.NSName(n.Ino) + ">"
}
