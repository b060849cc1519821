package correlate

import (
	"slices"
	"sort"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
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
		j := judged{m: m, v: c.boundVerdict(c.classify(a, m), m)}
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
func (c *Correlator) finding(kind finding.FindingKind, ev *event.Event, obj finding.Object, a *analysis, matches []match) *finding.Finding {
	f := &finding.Finding{Kind: kind, Time: ev.Time, Call: c.callOf(ev), Object: obj}
	var v verdict
	asked := c.freshen(matches, a.pins)
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
		f.Holders = append(f.Holders, finding.Holder{MntNS: ns, Self: ns == a.caller, Pins: a.pins[ns], Detached: c.hadCopy(ns, a)})
	}
	if len(groups) == 0 && len(pinOnly) > 0 {
		v = c.pinnedOnly(a, a.pins[pinOnly[0]], pinOnly[0])
	}
	if v.made != nil {
		c.leadWithMounter(f, v.made, a)
	}
	if len(groups) > 0 && f.Object.Dev == 0 {
		if m := groups[0][0].m.mount; m != nil && m.FSType == "nsfs" {
			// Not a mount point here (umount2 EINVAL): the copy says what
			// it is, a namespace file (net:[4026532290]).
			f.Object.Dev, f.Object.FSType, f.Object.Root = devOf(m), m.FSType, m.Root
		}
	}
	c.commands(f, asked)
	f.Cause, f.Summary, f.Fix, f.Inferred, f.Missing = v.cause, v.summary, v.fix, v.inferred, v.missing
	if len(groups) > 0 && groups[0][0].m.detached {
		f.Summary += "; the copy was then detached when " + ev.Target + " was unlinked (this kernel detaches copies in other " +
			"namespaces on unlink/rmdir; RHEL 7 with fs.may_detach_mounts=0 fails that unlinkat with EBUSY)"
	}
	f.Evidence = append([]finding.Evidence{eventEvidence(ev, "the call: "+eventSummary(ev)+" = "+retText(ev))}, v.evidence...)
	c.fillBirthIDs(f)
	return f
}

// leadWithMounter puts first the holder that is the namespace where a
// mount propagated from (shared-propagation): the caller's own namespace
// only received it, and the process to act on is in the other one, the one
// that made the mount while it still runs there, else that namespace's
// oldest process. When no table showed its copy there, it is added as the
// namespace that mounted it, where the mount event put it.
func (c *Correlator) leadWithMounter(f *finding.Finding, made *event.Event, a *analysis) {
	n := c.lineage.Get(made.MntNS)
	if n == nil || made.MntNS == a.caller {
		return // gone: nothing there to name
	}
	i := slices.IndexFunc(f.Holders, func(h finding.Holder) bool { return h.MntNS == made.MntNS && !h.Self && h.Exited.IsZero() })
	if i < 0 {
		h := finding.Holder{MntNS: n.Ino, MntNSID: n.ID, Where: made.Target, Created: n.Created}
		for _, m := range n.Members() {
			h.Processes = append(h.Processes, m.Ref())
		}
		f.Holders = append(f.Holders, h)
		i = len(f.Holders) - 1
	}
	h := f.Holders[i]
	if j := slices.IndexFunc(h.Processes, func(p finding.ProcRef) bool { return p.PID == int(made.PID) }); j >= 0 {
		h.Processes = append([]finding.ProcRef{h.Processes[j]}, slices.Delete(slices.Clone(h.Processes), j, j+1)...)
		h.Mounter = int(made.PID)
	}
	f.Holders = append([]finding.Holder{h}, slices.Delete(f.Holders, i, i+1)...)
}

// hadCopy reports whether another namespace's table read before its
// latest one showed the object where the latest shows none: the kernel has
// detached that copy since (rmdir or unlink of its mountpoint, its
// namespace's end), and a process pinning it there keeps a detached copy.
func (c *Correlator) hadCopy(ns uint32, a *analysis) bool {
	cur, prev := c.ledger.Table(ns), c.ledger.Previous(ns)
	if ns == a.caller || cur == nil || prev == nil {
		return false
	}
	callerTable := c.ledger.Table(a.caller)
	return len(findIn(prev, a.id, callerTable)) > 0 && len(findIn(cur, a.id, callerTable)) == 0
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
func (c *Correlator) pinnedOnly(a *analysis, pins []finding.PinRef, ns uint32) verdict {
	p := pins[0]
	who := finding.ProcName(p.Comm, p.PID) + " (" + p.How() + ")"
	if p.Pin == "blockdev-fd" {
		v := verdict{cause: finding.CauseInUse, summary: "not a leak: the device is open in " + c.label(ns) + " by " + who}
		v.fix = "stop " + finding.ProcName(p.Comm, p.PID) + " or have it close the device, then retry"
		if ns != a.caller {
			v.summary = "the device is held open in " + finding.NSName(ns) + " by " + who
		}
		v.evidence = []finding.Evidence{factEvidence(who + " in " + finding.NSName(ns))}
		return v
	}
	return verdict{
		cause: finding.CauseBusyCopy,
		summary: "no mount table shows it any more (the kernel detached the copies), but " + who + " in " + finding.NSName(ns) +
			" keeps a detached copy busy",
		evidence: []finding.Evidence{factEvidence(who + " in " + finding.NSName(ns) + " is on device " + a.id.dev.String())},
		fix:      "stop " + finding.ProcName(p.Comm, p.PID) + " or move it off " + p.Path + "; the detached copy then goes away",
	}
}

// maxCommands bounds the /proc reads one finding makes for command lines.
const maxCommands = 8

// freshen asks /proc what the processes a finding may name run now, before
// the verdict is written: the members of the holding namespaces (oldest
// first) and the pinners. A member that exec'd takes its new name; a pid
// another process has now leaves its namespace (never named, not even in
// the fix). The answers are kept for commands.
func (c *Correlator) freshen(matches []match, pins map[uint32][]finding.PinRef) map[int]procfs.Command {
	asked := map[int]procfs.Command{}
	gone := map[int]bool{}
	ask := func(pid int) (procfs.Command, bool) {
		if cmd, ok := asked[pid]; ok {
			return cmd, !gone[pid]
		}
		if len(asked) >= maxCommands {
			return procfs.Command{}, false
		}
		cmd, err := c.proc.Command(pid)
		if err != nil {
			cmd = procfs.Command{}
			gone[pid] = procfs.IsGone(err)
		}
		asked[pid] = cmd
		return cmd, err == nil
	}
	seen := map[uint32]bool{}
	for _, m := range matches {
		if m.self || !m.exited.IsZero() || m.ns.Dead || seen[m.ns.Ino] {
			continue
		}
		seen[m.ns.Ino] = true
		for _, mem := range m.ns.Members() {
			if cmd, ok := ask(mem.PID); ok {
				c.lineage.Verify(m.ns, mem, cmd.Comm, cmd.StartTime, c.now)
			} else if gone[mem.PID] {
				// It exited; its exit event is not handled yet (mntleak's
				// own short-lived helpers, read while it waited for them).
				c.lineage.Gone(m.ns, mem, c.now)
			}
		}
	}
	nss := make([]uint32, 0, len(pins))
	for ns := range pins {
		nss = append(nss, ns)
	}
	slices.Sort(nss)
	for _, ns := range nss {
		for _, p := range pins[ns] {
			ask(p.PID)
		}
	}
	return asked
}

// commands fills in what the named holder processes run, from freshen's
// answers. The failing process's command was captured when its event
// arrived.
func (c *Correlator) commands(f *finding.Finding, asked map[int]procfs.Command) {
	fill := func(p *finding.ProcRef) {
		if cmd, ok := asked[p.PID]; ok && p.Cmdline == "" {
			p.Exe, p.Cmdline = cmd.Exe, cmd.Cmdline
			if cmd.Comm != "" {
				p.Comm = cmd.Comm
			}
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

// holderOf renders a match as a Holder, with the namespace's processes.
func (c *Correlator) holderOf(m match, pins map[uint32][]finding.PinRef) finding.Holder {
	h := finding.Holder{MntNS: m.ns.Ino, MntNSID: m.ns.ID, Self: m.self, Where: m.where, Exited: m.exited, Created: m.ns.Created, Pins: pins[m.ns.Ino], Detached: m.detached}
	if m.mount != nil {
		h.MountID = m.mount.ID
		h.Propagation = Propagation(m.mount)
	}
	if m.self {
		return h // the caller's namespace may be the host's: its pins say who matters
	}
	if m.kept != nil {
		h.KeptBy = m.kept.by(c)
		h.Enter = m.kept.files[0]
		if f := m.kept.fd; f != nil {
			// The process holding it open is the one to act on.
			h.Pins = []finding.PinRef{{ProcRef: procRef(f.PID, f.StartTime, f.Comm, f.Cgroup), MntNS: f.MntNS, Pin: finding.PinNSFD,
				Path: "/proc/" + itoa(f.PID) + "/fd/" + itoa(f.FD)}}
		}
		return h // no process runs in it: none is named as a member
	}
	if m.bound != nil {
		h.KeptBy = m.bound.by(c)
	}
	members := m.ns.Members()
	if m.ns.Dead {
		members = m.ns.Past()
	}
	for i := range members {
		h.Processes = append(h.Processes, members[i].Ref())
	}
	return h
}
