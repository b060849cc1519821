package correlate

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// ruleInUse: the object is mounted in the caller's own namespace.
func (c *Correlator) ruleInUse(a *analysis, m match) (verdict, bool) {
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
