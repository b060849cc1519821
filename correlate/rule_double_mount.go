package correlate

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// ruleDoubleMount: the object was mounted twice, at two paths, by mount
// calls the ledger saw (a CSI node plugin mounts a volume at the kubelet's
// staging path and again at a directory of its own, or binds one to the
// other); the unmount of one path succeeded after both were made and the
// other still holds it. The kubelet unmounts only its own path, so the
// next step (rbd unmap, mkfs, the device's detach) fails with EBUSY: the
// finding names both mounts and the process that made each.
func (c *Correlator) ruleDoubleMount(a *analysis, m match) (verdict, bool) {
	if m.mount == nil {
		return verdict{}, false
	}
	pair := c.doubleMountOf(a, m)
	if pair.again == nil {
		return verdict{}, false
	}
	first, again, gone := pair.first, pair.again, pair.gone
	where, lead := c.label(m.ns.Ino), ""
	if m.self {
		where, lead = "the caller's own namespace", "not a leak: "
	}
	how := "mounted it again at " + again.Target
	if hasFlags(again, unix.MS_BIND) {
		how = "bound " + again.Source + " to " + again.Target
	}
	v := verdict{
		cause: finding.CauseDoubleMount,
		summary: lead + "mounted twice: " + actorName(first) + " mounted " + firstNonEmpty(first.Source, m.mount.Source) + " at " + first.Target +
			" at " + finding.Clock(first.Time) + " and " + actorName(again) + " " + how + " at " + finding.Clock(again.Time) + "; " +
			actorName(gone) + " unmounted " + gone.Target + " at " + finding.Clock(gone.Time) + " and the mount at " + m.where +
			" still holds it in " + where,
		evidence: []finding.Evidence{
			factEvidence(mountFact(m.ns.Ino, m.mount) + ": the mount that stayed"),
			eventEvidence(first, "first mount: "+eventSummary(first)),
			eventEvidence(again, "mounted again: "+eventSummary(again)),
			eventEvidence(gone, "one unmounted: "+eventSummary(gone)),
		},
		fix: c.doubleMountFix(m, again),
	}
	if !m.self && m.ns.Event != nil {
		v.evidence = append(v.evidence, creationEvidence(m.ns, "the remaining mount's namespace created: "))
	}
	return v, true
}

// doubleMount is the two mounts of one object and the unmount that took
// the first away.
type doubleMount struct{ first, again, gone *event.Event }

// doubleMountOf finds, in the ledger's history before the trigger, the
// mount that made the match's mount (again), an earlier mount of the same
// object at another path (first: the device at both, or again a bind of
// first's path), and a successful unmount of first's path after both.
// Where one mount was made twice the latest pair counts.
func (c *Correlator) doubleMountOf(a *analysis, m match) doubleMount {
	hist := c.ledger.History()
	before := func(ev *event.Event) bool { return !ev.Time.After(a.trigger.Time) }
	made := func(ev *event.Event) bool {
		return ev.Kind == event.KindMount && ev.Ret == 0 && ev.Flags&madeNothing == 0 && ev.Flags&unix.MS_MOVE == 0 && before(ev)
	}
	for i := len(hist) - 1; i >= 0; i-- {
		again := hist[i]
		if !made(again) || (again.Target != m.where && again.Target != m.mount.Mountpoint) ||
			(again.MntNS != m.ns.Ino && IsPrivate(m.mount)) {
			continue
		}
		for j := i - 1; j >= 0; j-- {
			first := hist[j]
			if !made(first) || first.Target == again.Target || !sameObjectMounted(first, again) {
				continue
			}
			if gone := unmountedAfter(hist, first.Target, again, a.trigger); gone != nil {
				return doubleMount{first: first, again: again, gone: gone}
			}
		}
		return doubleMount{} // the latest mount at the path is the one that counts
	}
	return doubleMount{}
}

// sameObjectMounted: two mounts of one object: the same device mounted
// at both paths, or the later one a bind of the earlier one's path (or of
// a directory in it). An earlier bind of the later path bound what lay
// there before the object was mounted on it: not the object.
func sameObjectMounted(first, again *event.Event) bool {
	if hasFlags(again, unix.MS_BIND) {
		return Under(again.Source, first.Target)
	}
	return !hasFlags(first, unix.MS_BIND) && strings.HasPrefix(first.Source, "/dev/") && first.Source == again.Source
}

// unmountedAfter is the last successful unmount of path after again was
// made and no later than the trigger (the trigger itself, when it is that
// unmount: a leak forming).
func unmountedAfter(hist []*event.Event, path string, again, trigger *event.Event) *event.Event {
	for i := len(hist) - 1; i >= 0; i-- {
		ev := hist[i]
		if ev.Kind == event.KindUmount && ev.Ret == 0 && ev.Target == path &&
			ev.Time.After(again.Time) && !ev.Time.After(trigger.Time) {
			return ev
		}
	}
	if trigger.Kind == event.KindUmount && trigger.Ret == 0 && trigger.Target == path && trigger.Time.After(again.Time) {
		return trigger
	}
	return nil
}

// doubleMountFix unmounts the remaining mount where it is, and says what
// the component that mounted twice must do.
func (c *Correlator) doubleMountFix(m match, again *event.Event) string {
	// The maker is named by its command only: a mount(8) it ran has exited,
	// and a fix names only processes that hold the object.
	fix := "umount " + m.where + " (the mount " + again.Comm + " made), then retry"
	if !m.self {
		pid := "PID"
		if ms := m.ns.Members(); len(ms) > 0 {
			pid = itoa(ms[0].Enter())
		}
		fix = "unmount it in " + finding.NSName(m.ns.Ino) + ": nsenter -t " + pid + " -m umount " + m.where +
			" (the mount " + again.Comm + " made), then retry"
	}
	return fix + "; " + again.Comm + " must unmount both mounts it made of the volume when it tears it down " +
		"(a CSI node plugin: NodeUnstageVolume and NodeUnpublishVolume undo every mount its NodeStageVolume and NodePublishVolume made, not only the kubelet's path)"
}
