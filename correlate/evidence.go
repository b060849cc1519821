package correlate

import (
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// eventRef summarises an event for a finding's evidence.
func eventRef(ev *event.Event) *finding.EventRef {
	return &finding.EventRef{Kind: ev.Kind.String(), MonoNS: ev.MonoNS, PID: ev.PID, Comm: ev.Comm, MntNS: ev.MntNS, Summary: eventSummary(ev),
		Container: ContainerID(ev.Cgroup), Unit: Unit(ev.Cgroup), Pod: PodUID(ev.Cgroup)}
}

func eventEvidence(ev *event.Event, what string) finding.Evidence {
	return finding.Evidence{Time: ev.Time, What: what, Event: eventRef(ev)}
}

// creationEvidence is a namespace's creation event, naming its creator by
// what it ran as: the unshare is made by "unshare" or systemd's "(dockerd)"
// before the exec that makes it dockerd.
func creationEvidence(n *Namespace, label string) finding.Evidence {
	ev := *n.Event
	if n.Creator.Comm != "" && n.Creator.PID == int(ev.PID) && n.Creator.Comm != ev.Comm {
		ev.Comm = n.Creator.Comm
	}
	e := eventEvidence(&ev, label+eventSummary(&ev))
	if ev.Comm != n.Event.Comm {
		e.Event.CommAtEvent = n.Event.Comm
	}
	return e
}

func factEvidence(what string) finding.Evidence { return finding.Evidence{What: what} }

// eventSummary is an event in a few words, for evidence and summaries.
func eventSummary(ev *event.Event) string {
	who := finding.ProcName(ev.Comm, int(ev.PID))
	switch ev.Kind {
	case event.KindMount:
		what := "mount " + ev.Source + " → " + ev.Target
		if ev.FlagNames != "" {
			what += " " + ev.FlagNames
		}
		if ev.Source == "" || ev.Source == "none" {
			what = "mount " + ev.FlagNames + " " + ev.Target
		}
		return what + " by " + who
	case event.KindUmount:
		return "umount2 " + ev.Target + " by " + who
	case event.KindUnshare:
		return "unshare(" + ev.FlagNames + ") by " + who + " " + finding.NSName(ev.MntNSBefore) + " → " + finding.NSName(ev.MntNSAfter)
	case event.KindSetns:
		return "setns by " + who + " into " + finding.NSName(ev.MntNSAfter)
	case event.KindNewNSFork:
		return who + " started [" + itoa(int(ev.ChildPID)) + "] in new " + finding.NSName(ev.ChildMntNS)
	case event.KindOpenTree:
		return "open_tree " + ev.Path + " " + ev.FlagNames + " by " + who
	case event.KindMoveMount:
		return "move_mount → " + ev.ToPath + " by " + who
	case event.KindMountSetattr:
		return "mount_setattr " + ev.Path + " " + ev.PropagationName + " by " + who
	case event.KindPivotRoot:
		return "pivot_root " + ev.NewRoot + " by " + who
	}
	return ev.Kind.String() + " by " + who
}

// shortPath elides the long middle of container paths for the human line:
// /var/lib/docker/overlay2/<64 hex>/merged/host -> …/merged/host.
func shortPath(p string) string {
	if i := hex64.FindStringIndex(p); i != nil {
		return "…" + p[i[1]:]
	}
	return p
}

func mountFact(ns uint32, m *procfs.Mount) string {
	return finding.NSName(ns) + " mount " + itoa(m.ID) + " at " + m.Mountpoint + " (" + m.FSType + " " + m.Source +
		", root " + m.Root + ", " + Propagation(m) + ")"
}

func itoa(n int) string {
	if n == 0 {
		return "0"
	}
	neg := n < 0
	if neg {
		n = -n
	}
	var b [20]byte
	i := len(b)
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	if neg {
		i--
		b[i] = '-'
	}
	return string(b[i:])
}
