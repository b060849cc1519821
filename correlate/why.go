package correlate

import (
	"slices"
	"strings"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// Target is what `mntleak why` asks about: a path in mntleak's namespace
// (a mountpoint, or a directory that fails to be removed), and/or a device.
type Target struct {
	Path string
	Dev  event.Dev // a block device, or any device number (major:minor)
	// Root narrows Dev to the mounts of one root within it, for a device
	// unrelated objects share: nsfs (every namespace file is 0:4) is
	// named by its root, "net:[4026532569]".
	Root string
	// Asker is the pid of the process that asks (mntleak why itself): its
	// cwd, root, binary and threads are never named as holders.
	Asker int
	// MntNS is the namespace Path is seen from, the asker's (0: the
	// host's): a copy there is "the caller's own", not a leak.
	MntNS uint32
}

// Why explains what holds a target now. Start must have taken the
// snapshot (and Remember applied any persistent lineage first); now is the
// time of the question. It returns nil when nothing holds the target.
func (c *Correlator) Why(t Target, now time.Time) *finding.Finding {
	if now.After(c.now) {
		c.now = now
	}
	if c.lastScan.IsZero() {
		// The startup snapshot's list, as Handle takes it at the first
		// event: a one-shot why has read every process a moment ago, so
		// its pin search asks only the holder namespaces' members (their
		// threads in them too) instead of every process's links again.
		c.lastScan = c.now
	}
	host := c.hostNS
	if t.MntNS != 0 {
		host = t.MntNS
	}
	ev := &event.Event{Kind: event.KindFailure, Time: now, MntNS: host, SyscallNr: -1, Syscall: "why", Path: t.Path, RDev: t.Dev}
	if f := c.whyStale(ev); f != nil {
		return f
	}
	var id identity
	obj := finding.Object{Path: t.Path, Dev: t.Dev}
	switch {
	case t.Dev != 0 && t.Root != "":
		id = identity{dev: t.Dev, root: t.Root, path: t.Path}
	case t.Dev != 0:
		id = identity{dev: t.Dev, block: true, path: t.Path}
	default:
		id, obj = c.objectOf(ev)
		id.layers = true // a directory someone wants to remove
	}
	a := &analysis{trigger: ev, caller: host, id: id}
	matches := c.search(id, host, c.opts.ExitGrace)
	// Namespaces no process runs in, kept by a bind of their nsfs file or
	// an open one, are asked too when a live one holds a copy: stopping
	// its processes alone would leave the object busy.
	kept, keptMissing := c.keptMatches(id, host)
	matches = keptInstead(matches, kept)
	for _, m := range matches {
		if m.self && m.mount != nil {
			a.own = m.mount
			break
		}
	}
	pins, pinErr := c.pinsFor(id, matches, 0)
	a.pins = withoutPID(pins, t.Asker)
	if byFD, fdMissing := c.fdMatches(id, host); len(byFD) > 0 {
		matches = append(matches, byFD...)
		keptMissing = append(keptMissing, fdMissing...)
	}
	if len(matches) == 0 && len(a.pins) == 0 {
		// Nothing holds it. Processes the search could not read (pinErr)
		// are not a holding: the caller says what it could not see once,
		// for the whole run (procfs.Visibility); a finding made of them
		// alone had no holder, no cause and no fix.
		return nil
	}
	c.readCgroups(matches, a.pins)
	f := c.finding(finding.KindHeld, ev, obj, a, matches)
	f.Missing = append(f.Missing, keptMissing...)
	if pinErr != nil {
		f.Missing = append(f.Missing, "the processes that pin it: "+pinErr.Error())
	}
	for i := range f.Holders {
		f.Holders[i].Processes = slices.DeleteFunc(f.Holders[i].Processes, func(p finding.ProcRef) bool { return t.Asker != 0 && p.PID == t.Asker })
	}
	f.Evidence = f.Evidence[1:] // no call to cite
	if !c.remembered {
		// Reconstructed from /proc alone: no event was seen happen.
		f.Inferred = true
	}
	f.Leak = c.leakFor(id, matches)
	nameActors(f)
	return f
}

// whyStale: a path that is a bind of a deleted file or directory.
func (c *Correlator) whyStale(ev *event.Event) *finding.Finding {
	t := c.ledger.Table(ev.MntNS)
	if t == nil || ev.Path == "" {
		return nil
	}
	m := t.At(ev.Path)
	if m == nil || !strings.HasSuffix(m.Root, "//deleted") {
		return nil
	}
	f := &finding.Finding{
		Kind: finding.KindHeld, Time: ev.Time, Call: c.callOf(ev), Cause: finding.CauseStaleBind, Inferred: c.bindOnto(ev.Path, ev.Time) == nil,
		Object:  finding.Object{Path: ev.Path, Dev: devOf(m), FSType: m.FSType, Root: m.Root},
		Holders: []finding.Holder{{MntNS: ev.MntNS, Self: true, Where: ev.Path, MountID: m.ID, Propagation: Propagation(m)}},
	}
	f.Evidence = append(f.Evidence, factEvidence(mountFact(ev.MntNS, m)+": its source was deleted"))
	if b := c.bindOnto(ev.Path, ev.Time); b != nil {
		f.Evidence = append(f.Evidence, eventEvidence(b, "the stale bind: "+eventSummary(b)))
	}
	f.Summary = "not a leak: " + ev.Path + " is a bind of " + strings.TrimSuffix(m.Root, "//deleted") + ", which has since been deleted (mountinfo: //deleted)"
	f.Fix = "unmount the stale bind " + ev.Path + " and bind the current file again"
	c.fillBirthIDs(f)
	return f
}

// withoutPID drops the pins of process pid (0: none) and the namespaces
// left with no pin.
func withoutPID(pins map[uint32][]finding.PinRef, pid int) map[uint32][]finding.PinRef {
	if pid == 0 {
		return pins
	}
	for ns, ps := range pins {
		ps = slices.DeleteFunc(ps, func(p finding.PinRef) bool { return p.PID == pid })
		if len(ps) == 0 {
			delete(pins, ns)
		} else {
			pins[ns] = ps
		}
	}
	return pins
}

// readCgroups reads the cgroups a one-shot's process list left out
// (procfs.Host.ListWithoutCgroups) for the processes a finding of matches
// and pins may name: the members of the namespaces that hold the object,
// and so their creators.
func (c *Correlator) readCgroups(matches []match, pins map[uint32][]finding.PinRef) {
	var nss []*Namespace
	for _, m := range matches {
		if m.ns != nil && !slices.Contains(nss, m.ns) {
			nss = append(nss, m.ns)
		}
	}
	for ns := range pins {
		if n := c.lineage.Get(ns); n != nil && !slices.Contains(nss, n) {
			nss = append(nss, n)
		}
	}
	for _, n := range nss {
		c.ReadCgroups(n)
	}
}

// ReadCgroups reads the cgroups of n's members that a one-shot's process
// list left out (procfs.Host.ListWithoutCgroups), before anything names
// them: a member whose process is gone or is in another namespace now
// keeps none. A member with a cgroup is not read again; a /proc whose list
// has them (a replay's, a test's) has nothing to read.
func (c *Correlator) ReadCgroups(n *Namespace) {
	src, ok := c.proc.(interface {
		Cgroup(pid int) (string, uint32, error)
	})
	if !ok {
		return
	}
	for _, m := range n.members {
		if m.Cgroup != "" {
			continue
		}
		cg, ns, err := src.Cgroup(m.PID)
		if err != nil || cg == "" || (m.TID == 0 && ns != n.Ino) {
			continue
		}
		m.Cgroup = cg
		c.lineage.renameCreator(m.PID, m.StartTime, m.Comm, cg, false)
	}
}
