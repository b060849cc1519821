package correlate

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// ruleRootfsHeld: a container's rootfs, mounted by its runtime in the
// caller's own namespace (containerd's task bundle), cannot be unmounted
// or removed because a process outside the container (an agent, a
// sandbox's helper) has a file, its cwd or its root in it (issue 28, item
// 5). Not a leak: nothing to release elsewhere; the holder is named.
func (c *Correlator) ruleRootfsHeld(a *analysis, m match) (verdict, bool) {
	if !m.self || m.mount == nil || !failedWith(a.trigger, unix.EBUSY) {
		return verdict{}, false
	}
	pins := a.pins[m.ns.Ino]
	task, ok := containerdTask(m.where)
	if !ok || len(pins) == 0 {
		return verdict{}, false
	}
	v := verdict{cause: finding.CauseRootfsHeld}
	var held, acts []string
	for _, p := range pins {
		who := finding.ProcName(p.Comm, p.PID)
		what := who + " has its " + p.Pin + " at " + p.Path
		act := "move " + who + " out of it"
		if p.FD != nil {
			what = who + " has fd " + itoa(*p.FD) + " open on " + p.Path
			act = "have " + who + " close fd " + itoa(*p.FD)
		}
		held = append(held, what)
		acts = append(acts, act)
		v.evidence = append(v.evidence, factEvidence(what))
	}
	v.evidence = append(v.evidence, factEvidence(mountFact(m.ns.Ino, m.mount)))
	made := ""
	if mnt := c.mountIn(m.ns.Ino, m.where, a.trigger); mnt != nil {
		v.evidence = append(v.evidence, eventEvidence(mnt, "rootfs mounted: "+eventSummary(mnt)))
		made = ", which " + finding.ProcName(mnt.Comm, int(mnt.PID)) + " mounted at " + finding.Clock(mnt.Time)
	}
	v.summary = "not a leak: " + strings.Join(held, ", ") + ", in the rootfs of " + task.String() + made +
		"; the runtime cannot unmount it while a process outside the container keeps it busy"
	v.fix = strings.Join(acts, ", ") + " (or stop it), then delete the task again (ctr -n " + task.ns + " task delete " + task.id +
		"; the kubelet retries on its own); an agent reads a running container's files through /proc/PID/root, not the node's path of its rootfs"
	return v, true
}

// task is a container of containerd, named by its task bundle.
type task struct{ ns, id string }

func (t task) String() string { return "container " + t.id + " (containerd namespace " + t.ns + ")" }

// containerdTask reads the container a path is the rootfs of: containerd's
// runtime v2 keeps a task's bundle at STATE/io.containerd.runtime.v2.task/
// NAMESPACE/ID, its rootfs mounted at the bundle's rootfs.
func containerdTask(p string) (task, bool) {
	const dir = "/io.containerd.runtime.v2.task/"
	i := strings.LastIndex(p, dir)
	if i < 0 {
		return task{}, false
	}
	parts := strings.Split(p[i+len(dir):], "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] != "rootfs" {
		return task{}, false
	}
	return task{ns: parts[0], id: parts[1]}, true
}

// mountIn is the last successful mount made in namespace ns at target
// before the call: the mount that made the object there.
func (c *Correlator) mountIn(ns uint32, target string, call *event.Event) *event.Event {
	hist := c.ledger.History()
	for i := len(hist) - 1; i >= 0; i-- {
		ev := hist[i]
		if ev.Kind == event.KindMount && ev.Ret == 0 && ev.MntNS == ns && ev.Target == target &&
			ev.Flags&madeNothing == 0 && ev.Time.Before(call.Time) {
			return ev
		}
	}
	return nil
}
