package correlate

import (
	"sort"

	"github.com/mntleak/mntleak/event"
)

// judged is a match with its verdict.
type judged struct {
	m match
	v verdict
}

// group judges every match and groups them by namespace, each group led by
// its most specific verdict, groups in the order their namespaces came.
func (c *Correlator) group(a *analysis, matches []match) [][]judged {
	var groups [][]judged
	index := map[uint32]int{}
	for _, m := range matches {
		j := judged{m: m, v: c.classify(a, m)}
		key := m.ns.Ino
		if !m.exited.IsZero() {
			key = ^key // a dead generation is not the live one
		}
		i, ok := index[key]
		if !ok {
			index[key] = len(groups)
			groups = append(groups, []judged{j})
			continue
		}
		g := groups[i]
		better := c.rankOf(j.v.cause) < c.rankOf(g[0].v.cause) ||
			c.rankOf(j.v.cause) == c.rankOf(g[0].v.cause) && j.m.where == a.id.path && g[0].m.where != a.id.path
		if better {
			g = append([]judged{j}, g...)
		} else {
			g = append(g, j)
		}
		groups[i] = g
	}
	return groups
}

// finding assembles a Finding: every holder, and the verdict of the
// primary one.
func (c *Correlator) finding(kind FindingKind, ev *event.Event, obj Object, a *analysis, matches []match) *Finding {
	f := &Finding{Kind: kind, Time: ev.Time, Call: c.callOf(ev), Object: obj}
	var v verdict
	groups := c.group(a, matches)
	if len(groups) > 0 {
		p := c.primary(groups)
		groups[0], groups[p] = groups[p], groups[0]
		v = groups[0][0].v
		for _, g := range groups {
			h := c.holderOf(g[0].m, a.pins)
			seen := map[string]bool{h.Where: true}
			for _, j := range g[1:] {
				if !seen[j.m.where] { // stacked mounts repeat a mount point
					seen[j.m.where] = true
					h.Also = append(h.Also, j.m.where)
				}
			}
			f.Holders = append(f.Holders, h)
		}
	}
	// Processes pinning the object where no mount table shows it: a copy
	// the kernel detached, still kept busy.
	var pinOnly []uint32
	for ns := range a.pins {
		if !hasMatchIn(matches, ns) {
			pinOnly = append(pinOnly, ns)
		}
	}
	sort.Slice(pinOnly, func(i, j int) bool { return pinOnly[i] < pinOnly[j] })
	for _, ns := range pinOnly {
		f.Holders = append(f.Holders, Holder{MntNS: ns, Self: ns == a.caller, Pins: a.pins[ns]})
	}
	if len(groups) == 0 && len(pinOnly) > 0 {
		v = c.pinnedOnly(a, a.pins[pinOnly[0]], pinOnly[0])
	}
	c.commands(f)
	f.Cause, f.Summary, f.Fix, f.Inferred, f.Missing = v.cause, v.summary, v.fix, v.inferred, v.missing
	if len(groups) > 0 && groups[0][0].m.detached {
		f.Summary += "; the copy was then detached when " + ev.Target + " was unlinked (this kernel detaches copies in other " +
			"namespaces on unlink/rmdir; RHEL 7 with fs.may_detach_mounts=0 fails that unlinkat with EBUSY)"
	}
	f.Evidence = append([]Evidence{eventEvidence(ev, "the call: "+eventSummary(ev)+" = "+retText(ev))}, v.evidence...)
	return f
}

func retText(ev *event.Event) string {
	if ev.Ret < 0 {
		return "-1 " + ev.Errno
	}
	return itoa(int(ev.Ret))
}

// primary picks the group the verdict is about: the live holding whose
// cause comes first in the cause table (a busy copy elsewhere for a busy
// unmount, then the caller's own mount, then the most specific leak).
func (c *Correlator) primary(groups [][]judged) int {
	best := -1
	for i, g := range groups {
		if !g[0].m.exited.IsZero() {
			continue
		}
		if best < 0 || c.rankOf(g[0].v.cause) < c.rankOf(groups[best][0].v.cause) {
			best = i
		}
	}
	if best < 0 {
		return 0
	}
	return best
}

// pinnedOnly explains an object no mount table shows, held by processes.
func (c *Correlator) pinnedOnly(a *analysis, pins []PinRef, ns uint32) verdict {
	p := pins[0]
	who := procName(p.Comm, p.PID) + " (" + p.Pin + " " + p.Path + ")"
	if p.Pin == "blockdev-fd" {
		v := verdict{cause: CauseInUse, summary: "not a leak: the device is open in " + c.label(ns) + " by " + who}
		v.fix = "stop " + procName(p.Comm, p.PID) + " or have it close the device, then retry"
		if ns != a.caller {
			v.summary = "the device is held open in " + nsName(ns) + " by " + who
		}
		v.evidence = []Evidence{factEvidence(who + " in " + nsName(ns))}
		return v
	}
	return verdict{
		cause: CauseBusyCopy,
		summary: "no mount table shows it any more (the kernel detached the copies), but " + who + " in " + nsName(ns) +
			" keeps a detached copy busy",
		evidence: []Evidence{factEvidence(who + " in " + nsName(ns) + " is on device " + a.id.dev.String())},
		fix:      "stop " + procName(p.Comm, p.PID) + " or move it off " + p.Path + "; the detached copy then goes away",
	}
}

// maxCommands bounds the /proc reads one finding makes for command lines.
const maxCommands = 8

// commands fills in what the named holder processes run. The failing
// process's command was captured when its event arrived.
func (c *Correlator) commands(f *Finding) {
	n := 0
	fill := func(p *ProcRef) {
		if n >= maxCommands || p.Cmdline != "" {
			return
		}
		n++
		if cmd, err := c.proc.Command(p.PID); err == nil {
			p.Exe, p.Cmdline = cmd.Exe, cmd.Cmdline
		}
	}
	for i := range f.Holders {
		h := &f.Holders[i]
		if !h.Exited.IsZero() {
			continue // gone: its pid may be someone else's now
		}
		for j := range h.Processes {
			fill(&h.Processes[j])
		}
		for j := range h.Pins {
			fill(&h.Pins[j].ProcRef)
		}
	}
}
