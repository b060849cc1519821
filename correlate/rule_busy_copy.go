package correlate

import (
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// ruleBusyCopy: an unmount that failed because its propagation reached a
// copy elsewhere that a process keeps busy.
func (c *Correlator) ruleBusyCopy(a *analysis, m match) (verdict, bool) {
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

// propagatesTo: an unmount of own propagates to copy (a peer of its group,
// or a slave of it).
func propagatesTo(own, copy *procfs.Mount) bool {
	if own == nil || copy == nil {
		return false
	}
	shared, _ := tags(own)
	s, master := tags(copy)
	return shared != 0 && (s == shared || master == shared)
}
