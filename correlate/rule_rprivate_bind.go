package correlate

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// ruleRprivateBind: the object sits under a recursive bind that is private in
// the holder. The outermost such bind is the one a runtime made (a hostPath
// / at /host); the mounts below it are its submounts.
func (c *Correlator) ruleRprivateBind(a *analysis, m match) (verdict, bool) {
	if m.self || m.mount == nil {
		return verdict{}, false
	}
	var chain []*procfs.Mount
	for anc := m.mount; anc != nil; anc = m.table.Parent(anc) {
		chain = append(chain, anc)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		anc := chain[i]
		if anc.Mountpoint == "/" || !IsPrivate(anc) {
			continue
		}
		if src, ok := c.BindSource(m.ns, anc); ok {
			return c.rprivateVerdict(a, m, anc, src), true
		}
	}
	return verdict{}, false
}

func (c *Correlator) rprivateVerdict(a *analysis, m match, bind *procfs.Mount, src string) verdict {
	v := verdict{cause: finding.CauseRprivateBind}
	container := c.containerOf(m)
	bindEv, privEv := c.bindEvents(m.ns.Ino, src, bind.Mountpoint)
	var how string
	if bindEv != nil {
		container = firstNonEmpty(container, ContainerID(bindEv.Target))
		v.evidence = append(v.evidence, eventEvidence(bindEv, "recursive bind: "+eventSummary(bindEv)))
		target := bindEv.Target
		if bindEv.Kind == event.KindOpenTree {
			target = bind.Mountpoint
		}
		how = "leaked by rbind " + src + " → " + shortPath(target)
		if privEv != nil {
			v.evidence = append(v.evidence, eventEvidence(privEv, "made private: "+eventSummary(privEv)))
			how += " + " + privateFlags(privEv)
		}
		how += " by " + finding.ProcName(bindEv.Comm, int(bindEv.PID)) + " at " + finding.Clock(bindEv.Time)
	} else {
		v.inferred = true
		how = "leaked by a private recursive bind of " + src + " at " + bind.Mountpoint + " in " + finding.NSName(m.ns.Ino) + ", made before tracing began"
	}
	if m.ns.Event != nil {
		v.evidence = append(v.evidence, creationEvidence(m.ns, "namespace created: "))
	}
	v.evidence = append(v.evidence,
		factEvidence(mountFact(m.ns.Ino, bind)+": a bind of the host's "+src+" with no propagation"),
		factEvidence(mountFact(m.ns.Ino, m.mount)))
	pod, docker, unit := c.madeBy(m)
	what := "" // no evidence of the tool that made it
	switch {
	case pod != "":
		what = "hostPath " + src + " with mountPropagation None"
	case docker:
		what = "docker -v " + src + " with the default propagation, rprivate"
	case unit != "":
		what = "made in the namespace of " + unit
	}
	if container != "" {
		what = strings.TrimPrefix(what+", container "+finding.ShortID(container), ", ")
	}
	if what != "" {
		what = " (" + what + ")"
	}
	v.summary = how + what + c.stayed(a)
	switch {
	case pod != "":
		v.fix = "mountPropagation: HostToContainer (rslave) for the hostPath " + src + " volume of pod " + pod
	case docker:
		v.fix = "docker run -v " + src + ":" + bind.Mountpoint + ":rslave (the default, rprivate, keeps copies of what is mounted below " + src + ")"
	case unit != "":
		v.fix = "bind " + src + " into " + unit + " with BindPaths=" + src + ":" + bind.Mountpoint + " (systemd keeps it a slave) rather than a private bind, " +
			"or make it a slave there (mount --make-rslave " + bind.Mountpoint + " in its namespace); restart " + unit + " to drop the stale copy"
	default:
		v.fix = "make the bind a slave so unmounts below " + src + " reach it: mount --make-rslave " + bind.Mountpoint + " in " + finding.NSName(m.ns.Ino) +
			" (for the tool that made it: docker -v " + src + ":" + bind.Mountpoint + ":rslave, Kubernetes mountPropagation: HostToContainer); " +
			"restart the processes of " + finding.NSName(m.ns.Ino) + " to drop the stale copy"
	}
	if container != "" {
		v.fix += "; restart container " + finding.ShortID(container) + " to drop the stale copy"
	}
	return v
}

// bindEvents finds the recursive bind of src that made target (a path
// ending in the container-side mount point) and the propagation change
// that made it private, preferring events inside the holder namespace.
func (c *Correlator) bindEvents(ns uint32, src, target string) (bind, private *event.Event) {
	hist := c.ledger.History()
	isTarget := func(p string) bool { return p == target || strings.HasSuffix(p, target) && target != "/" }
	for pass := 0; pass < 2 && bind == nil; pass++ {
		for i := len(hist) - 1; i >= 0; i-- {
			ev := hist[i]
			if ev.Ret < 0 || (pass == 0 && ev.MntNS != ns) {
				continue
			}
			switch {
			case ev.Kind == event.KindMount && hasFlags(ev, unix.MS_BIND|unix.MS_REC) && !hasFlags(ev, unix.MS_REMOUNT) && ev.Source == src && isTarget(ev.Target):
				bind = ev
			case ev.Kind == event.KindMoveMount && isTarget(ev.ToPath) && ev.MntID != 0:
				if ot := c.openTreeFor(ev, i, src); ot != nil {
					bind = ot
				}
			}
			if bind != nil {
				break
			}
		}
	}
	if bind == nil {
		return nil, nil
	}
	bindTarget := bind.Target
	for _, ev := range hist {
		if ev.Ret < 0 || ev.MonoNS < bind.MonoNS {
			continue
		}
		switch {
		case ev.Kind == event.KindMount && hasFlags(ev, unix.MS_PRIVATE) && (ev.Target == bindTarget || isTarget(ev.Target)):
			return bind, ev
		case ev.Kind == event.KindMountSetattr && ev.Propagation == unix.MS_PRIVATE && isTarget(ev.Path):
			return bind, ev
		}
	}
	return bind, nil
}

// openTreeFor returns the open_tree(OPEN_TREE_CLONE|AT_RECURSIVE) of src
// whose tree move_mount (history index i) attached.
func (c *Correlator) openTreeFor(mv *event.Event, i int, src string) *event.Event {
	hist := c.ledger.History()
	for j := i - 1; j >= 0; j-- {
		ev := hist[j]
		if ev.Kind == event.KindOpenTree && ev.MntID == mv.MntID && ev.PID == mv.PID &&
			hasFlags(ev, unix.OPEN_TREE_CLONE|unix.AT_RECURSIVE) && ev.Path == src {
			return ev
		}
	}
	return nil
}

func privateFlags(ev *event.Event) string {
	if ev.Kind == event.KindMountSetattr {
		return "mount_setattr(" + ev.PropagationName + ")"
	}
	return ev.FlagNames
}

func (c *Correlator) containerOf(m match) string {
	members := m.ns.Members()
	if m.ns.Dead {
		members = m.ns.Past()
	}
	for _, mem := range members {
		if id := ContainerID(mem.Cgroup); id != "" {
			return id
		}
	}
	return ContainerID(m.ns.Creator.Cgroup)
}

// madeBy tells, from the holder's cgroups, which tool made its binds: a
// Kubernetes pod (its UID), Docker, or a systemd unit (its name).
func (c *Correlator) madeBy(m match) (pod string, docker bool, unit string) {
	members := m.ns.Members()
	if m.ns.Dead {
		members = m.ns.Past()
	}
	cgroups := []string{m.ns.Creator.Cgroup}
	for _, mem := range members {
		cgroups = append(cgroups, mem.Cgroup)
	}
	for _, cg := range cgroups {
		if p := PodUID(cg); p != "" {
			return p, false, ""
		}
		docker = docker || strings.HasPrefix(cg, "/docker/") || strings.Contains(cg, "/docker-")
		if u := Unit(cg); unit == "" && strings.HasSuffix(u, ".service") {
			unit = u
		}
	}
	if docker {
		unit = ""
	}
	return "", docker, unit
}

// BindSource returns the directory of the namespace a copy came from (its
// parent's, else the host's) that a mount shows, when that differs from
// where it is mounted: the mount is a bind of that directory.
func (c *Correlator) BindSource(n *Namespace, m *procfs.Mount) (string, bool) {
	for _, ns := range []uint32{n.Parent, c.hostNS} {
		from := c.ledger.Table(ns)
		if from == nil || ns == n.Ino {
			continue
		}
		for _, b := range from.Mounts {
			if devOf(b) != devOf(m) || !Under(m.Root, b.Root) {
				continue
			}
			if hp := join(b.Mountpoint, rel(m.Root, b.Root)); hp != m.Mountpoint {
				return hp, true
			}
		}
	}
	return "", false
}
