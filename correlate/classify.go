package correlate

import (
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// verdict is the classifier's answer for one holder.
type verdict struct {
	cause    finding.Cause
	summary  string
	evidence []finding.Evidence
	fix      string
	inferred bool
	missing  []string
	// made is the mount event of a copy made in another namespace (a
	// shared-propagation verdict): the finding leads with the namespace
	// that made it, and names the process that made it while it runs there.
	made *event.Event
}

// analysis is the context of one finding being built.
type analysis struct {
	trigger *event.Event // the failing call, or the umount that left a copy
	leak    bool         // a leak forming (the umount succeeded)
	caller  uint32
	id      identity
	pins    map[uint32][]finding.PinRef
	// own is the caller's own mount of the object, for a question (why,
	// release) asked where the object is still mounted.
	own *mountinfo.Info
}

// question: the trigger is a question (why, release), not a call that
// failed.
func (a *analysis) question() bool { return a.trigger.SyscallNr < 0 }

// propagatesTo: an unmount of own propagates to copy (a peer of its group,
// or a slave of it).
func propagatesTo(own, copy *mountinfo.Info) bool {
	if own == nil || copy == nil {
		return false
	}
	shared, _ := tags(own)
	s, master := tags(copy)
	return shared != 0 && (s == shared || master == shared)
}

// label names a namespace for people: "the host" for pid 1's.
func (c *Correlator) label(ns uint32) string {
	if ns == c.hostNS && ns != 0 {
		return "the host"
	}
	return finding.NSName(ns)
}

// stayed is the tail of a leak summary: the unmount that left the copy.
func (c *Correlator) stayed(a *analysis) string {
	if !a.leak {
		return ""
	}
	return "; " + c.label(a.caller) + " unmounted " + a.trigger.Target + " at " + finding.Clock(a.trigger.Time) + " and the copy stayed"
}

// busyCopyRule: an unmount that failed because its propagation reached a
// copy elsewhere that a process keeps busy.
func (c *Correlator) busyCopyRule(a *analysis, m match) (verdict, bool) {
	pins := a.pins[m.ns.Ino]
	failed := a.trigger.Kind == event.KindUmount && failedWith(a.trigger, unix.EBUSY)
	asked := a.question() && propagatesTo(a.own, m.mount)
	if m.self || !(failed || asked) || len(pins) == 0 {
		return verdict{}, false
	}
	var who []string
	for _, p := range pins {
		who = append(who, finding.ProcName(p.Comm, p.PID)+" ("+p.Pin+" "+p.Path+")")
	}
	unmount := "the unmount propagates"
	if asked {
		unmount = "an unmount of " + a.own.Mountpoint + " here propagates"
	}
	v := verdict{
		cause:    finding.CauseBusyCopy,
		summary:  unmount + " to the copy in " + finding.NSName(m.ns.Ino) + " at " + m.where + ", which is busy: " + strings.Join(who, ", "),
		fix:      "stop " + finding.ProcName(pins[0].Comm, pins[0].PID) + " or move its working directory and files off " + m.where + ", then retry the unmount (or unmount lazily with umount -l)",
		inferred: m.ns.Event == nil,
	}
	if m.ns.Event != nil {
		v.evidence = append(v.evidence, creationEvidence(m.ns, "namespace created: "))
	}
	v.evidence = append(v.evidence, factEvidence(mountFact(m.ns.Ino, m.mount)))
	for _, p := range pins {
		v.evidence = append(v.evidence, factEvidence(finding.ProcName(p.Comm, p.PID)+" in "+finding.NSName(p.MntNS)+" has its "+p.Pin+" at "+p.Path))
	}
	return v, true
}

func (c *Correlator) privateTmp(a *analysis, m match) (verdict, bool) {
	if m.self || m.table == nil {
		return verdict{}, false
	}
	tmp := m.table.At("/tmp")
	if tmp == nil {
		return verdict{}, false
	}
	unit := PrivateTmpUnit(tmp.Root)
	if unit == "" {
		return verdict{}, false
	}
	v := verdict{cause: finding.CausePrivateTmp, inferred: m.ns.Event == nil}
	v.evidence = append(v.evidence, factEvidence(finding.NSName(m.ns.Ino)+" binds /tmp from "+tmp.Root+" (PrivateTmp=yes of "+unit+")"))
	created := "before tracing began"
	if m.ns.Event != nil {
		v.evidence = append(v.evidence, creationEvidence(m.ns, "namespace created: "))
		created = "by " + finding.ProcName(m.ns.Creator.Comm, m.ns.Creator.PID) + " at " + finding.Clock(m.ns.Created)
	}
	order := ""
	if mnt := c.mountEventFor(a.id, m.ns.Created); mnt != nil {
		v.evidence = append(v.evidence, eventEvidence(mnt, "object mounted: "+eventSummary(mnt)))
		if !m.ns.Created.IsZero() && mnt.Time.Before(m.ns.Created) {
			order = ", after " + a.id.path + " was mounted at " + finding.Clock(mnt.Time) + ", so it copied it"
		}
	}
	v.evidence = append(v.evidence, factEvidence(mountFact(m.ns.Ino, m.mount)))
	v.summary = "held by the PrivateTmp namespace of " + unit + " (" + finding.NSName(m.ns.Ino) + ", created " + created + order + ")" + c.stayed(a)
	v.fix = "restart " + unit + " to release its copy; to prevent it, keep the mounts below " + parentDir(m.where) +
		" shared or slave so unmounts propagate into " + unit + "'s slave namespace, or start " + unit + " before the containers"
	return v, true
}

// BindSource returns the directory of the namespace a copy came from (its
// parent's, else the host's) that a mount shows, when that differs from
// where it is mounted: the mount is a bind of that directory.
func (c *Correlator) BindSource(n *Namespace, m *mountinfo.Info) (string, bool) {
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

// rprivateBind: the object sits under a recursive bind that is private in
// the holder. The outermost such bind is the one a runtime made (a hostPath
// / at /host); the mounts below it are its submounts.
func (c *Correlator) rprivateBind(a *analysis, m match) (verdict, bool) {
	if m.self || m.mount == nil {
		return verdict{}, false
	}
	var chain []*mountinfo.Info
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

func (c *Correlator) rprivateVerdict(a *analysis, m match, bind *mountinfo.Info, src string) verdict {
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

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}
