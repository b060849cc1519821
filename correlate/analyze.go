package correlate

import (
	"slices"
	"strings"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"golang.org/x/sys/unix"
)

// callOf describes the event as the finding's call.
func (c *Correlator) callOf(ev *event.Event) finding.Call {
	call := finding.Call{Time: ev.Time, PID: ev.PID, TID: ev.TID, Comm: ev.Comm, Syscall: ev.Syscall, Errno: ev.Errno,
		MntNS: ev.MntNS, Exe: ev.Exe, Cmdline: ev.Cmdline}
	cgroup := ev.Cgroup // read when the event arrived; a member's, when it carried none
	if n := c.lineage.Get(ev.MntNS); n != nil {
		// The youngest of the caller's members that names a cgroup (a
		// thread's after the main thread's), as Members orders them.
		var last *Member
		for _, m := range n.members {
			if m.PID == int(ev.PID) && m.Cgroup != "" && (last == nil || olderFirst(*m, *last) > 0) {
				last = m
			}
		}
		if last != nil {
			cgroup = last.Cgroup
		}
	}
	call.Container, call.Unit, call.Pod = ContainerID(cgroup), Unit(cgroup), PodUID(cgroup)
	return call
}

// incidentKey identifies a failure for folding retries.
func incidentKey(ev *event.Event) string {
	return itoa(int(ev.MntNS)) + "|" + ev.Syscall + "|" + ev.Errno + "|" + ev.Path + ev.Target + ev.Source + "|" + ev.RDev.String()
}

// repeated reports whether ev repeats a failure seen within the window.
func (c *Correlator) repeated(ev *event.Event) bool {
	key := incidentKey(ev)
	last, seen := c.incidents[key]
	c.incidents[key] = ev.Time
	if len(c.incidents) > 4096 {
		for k, t := range c.incidents {
			if ev.Time.Sub(t) > c.opts.RetryWindow {
				delete(c.incidents, k)
			}
		}
	}
	return seen && ev.Time.Sub(last) <= c.opts.RetryWindow
}

// failure explains one failing call.
func (c *Correlator) failure(ev *event.Event) {
	if c.repeated(ev) {
		return
	}
	if (ev.Kind == event.KindMount || ev.Kind == event.KindMoveMount) && failedWith(ev, unix.ENOENT) {
		c.staleBind(ev)
		return
	}
	if ev.Kind == event.KindUmount && failedWith(ev, unix.EINVAL) && c.unmountedAlready(ev) {
		return // a harmless double unmount: the caller's own went through
	}
	before := c.tables()
	missing := c.refresh(nil)
	id, obj := c.objectOf(ev)
	// A pending leak on this object is confirmed now, unless the device
	// number is a freed one the kernel reused for a newer filesystem.
	c.settleLeaks(func(leak identity) bool { return sameObject(id, leak) && !c.reused(id, leak) }, false)
	a := &analysis{trigger: ev, caller: ev.MntNS, id: id}
	held := func() []match {
		matches := c.search(id, ev.MntNS, c.opts.ExitGrace)
		if ev.Kind == event.KindUmount && failedWith(ev, unix.EINVAL) {
			// "Not a mount point here": only a holding elsewhere explains it.
			matches = otherThan(matches, ev.MntNS)
		}
		if len(otherThan(matches, ev.MntNS)) == 0 {
			// The caller may remove the directory right after failing (the
			// runtime deletes the bundle), which detaches the private copies
			// elsewhere before /proc is read: the tables from before show them.
			matches = append(matches, c.detachedCopies(id, ev, before, nil, matches)...)
		}
		return matches
	}
	matches := held()
	if c.rescanFor(matches) {
		matches = held()
	}
	if c.reread(matches) {
		matches = held()
	}
	// Namespaces no process runs in hold copies too, kept by a bind of
	// their nsfs file (read through it), or by a process holding it open:
	// searched also when a live namespace elsewhere holds a copy, since
	// stopping its processes alone would leave the object busy. One whose
	// last process left a moment ago is alive if it is kept so.
	kept, keptMissing := c.keptMatches(id, ev.MntNS)
	matches = keptInstead(matches, kept)
	missing = append(missing, keptMissing...)
	var pinErr error
	a.pins, pinErr = c.pinsFor(id, matches, ev.MonoNS)
	if byFD, fdMissing := c.fdMatches(id, ev.MntNS); len(byFD) > 0 {
		matches = keptInstead(matches, byFD)
		missing = append(missing, fdMissing...)
	}
	if len(matches) == 0 && len(a.pins) == 0 {
		return // nothing holds it: not a mount problem (or already released)
	}
	c.markBound(matches)
	f := c.finding(finding.KindFailure, ev, obj, a, matches)
	f.Missing = append(f.Missing, missing...)
	if pinErr != nil {
		f.Missing = append(f.Missing, "the processes that pin it: "+pinErr.Error())
	}
	f.Leak = c.leakFor(id, matches)
	c.report(f)
}

// reread reads again the mount tables of the namespaces a failure is
// about to cite that were read before this event, and reports whether it
// read one. A successful rmdir or unlink of a mountpoint detaches its
// copies in every namespace (6.x kernels) and makes no event, so a table
// read before it still shows a copy that is gone: a failure must never
// cite one (nor name its namespace's process as the holder). A table the
// kernel's mount notes keep true is not read again: a detach is one of
// them, applied before this event (keptTrue, mountnotes.go).
func (c *Correlator) reread(matches []match) bool {
	read := false
	for _, m := range matches {
		if m.self || !m.exited.IsZero() || m.kept != nil || m.detached || m.ns.Dead {
			continue
		}
		if t := c.ledger.Table(m.ns.Ino); t != nil && t.ReadAt.Before(c.now) && !c.ledger.keptTrue(t) {
			_ = c.readTable(m.ns) // unreadable: its processes exited, the next search says so
			read = true
		}
	}
	return read
}

// unmountedAlready reports whether the caller's namespace unmounted the
// same path successfully since it was last mounted there: an umount2
// EINVAL then is a runtime's second unmount of its own mount (dockerd,
// containerd-shim), not something another namespace holds.
func (c *Correlator) unmountedAlready(ev *event.Event) bool {
	hist := c.ledger.History()
	for i := len(hist) - 1; i >= 0; i-- {
		h := hist[i]
		if h.MntNS != ev.MntNS || h.Ret != 0 || h.MonoNS > ev.MonoNS {
			continue
		}
		switch {
		case h.Kind == event.KindUmount && h.Target == ev.Target:
			return true
		case h.Kind == event.KindMount && h.Target == ev.Target,
			h.Kind == event.KindMoveMount && h.ToPath == ev.Target:
			return false // mounted again since
		}
	}
	return false
}

// keptInstead adds the matches of kept namespaces, in place of the
// matches that took them for gone (their last process left): they live
// on. With one, no match of a namespace gone a moment before stays: the
// search takes those only when no live namespace explains the object
// (their mounts went with them), and a kept one is live.
func keptInstead(ms, kept []match) []match {
	out := slices.DeleteFunc(slices.Clone(ms), func(m match) bool {
		return !m.exited.IsZero() && len(kept) > 0
	})
	return append(out, kept...)
}

// objectOf works out what a failing call was about.
func (c *Correlator) objectOf(ev *event.Event) (identity, finding.Object) {
	p := firstNonEmpty(ev.Path, ev.Target)
	obj := finding.Object{Path: p}
	if td := ev.Teardown; td != nil && td.Dev != 0 {
		// A control file (rbd remove, zram hot_remove, /dev/mapper/control)
		// named the device in its payload: the object is the device.
		obj = finding.Object{Path: td.Device, Dev: td.Dev, Operation: td.Op, Via: ev.Path}
		return identity{dev: td.Dev, block: true, path: td.Device}, obj
	}
	if ev.RDev != 0 {
		obj.Dev = ev.RDev
		return identity{dev: ev.RDev, block: true, path: p}, obj
	}
	if strings.HasPrefix(p, "/dev/") {
		if dev, err := c.proc.BlockDevice(p); err == nil {
			obj.Dev = dev
			return identity{dev: dev, block: true, path: p}, obj
		}
	}
	t := c.ledger.Table(ev.MntNS)
	if t != nil && t.At(p) == nil && !strings.HasPrefix(p, "/dev/") {
		// Not a mount point as given: through a symbolic link (umount
		// /var/run/docker/netns/x) the kernel looked up another path.
		p = c.canonical(ev, p)
	}
	if t != nil {
		if m := t.At(p); m != nil {
			obj.Dev, obj.FSType, obj.Root = devOf(m), m.FSType, m.Root
			return identityOf(m, p), obj
		}
	}
	id := identity{path: p}
	switch ev.Syscall {
	case "rmdir", "unlinkat", "unlink", "rename", "renameat", "renameat2":
		id.layers = ev.Kind == event.KindFailure
	}
	if mnt := c.mountEventFor(id, ev.Time); mnt != nil {
		id.fs, obj.FSType = mnt.FSType, mnt.FSType
		if mnt.FSType == "" || mnt.FSType == "none" || hasFlags(mnt, unix.MS_BIND) {
			id.fs, obj.FSType = "", ""
		}
	}
	return id, obj
}

// canonical resolves the symbolic links in a failing call's path as the
// caller's namespace sees them, asking the caller, else a live member of
// its namespace (a pid that now lives elsewhere does not answer); the path
// as given when nobody can.
func (c *Correlator) canonical(ev *event.Event, p string) string {
	pids := []int{int(ev.PID)}
	if n := c.lineage.Get(ev.MntNS); n != nil {
		for _, m := range n.oldest(2, func(m Member) bool { return m.PID == int(ev.PID) }) {
			pids = append(pids, m.PID)
		}
	}
	for _, pid := range pids {
		if pid <= 0 {
			continue
		}
		if real, ns, err := c.proc.RealPath(pid, p); err == nil && ns == ev.MntNS {
			return real
		}
	}
	return p
}

func hasMatchIn(ms []match, ns uint32) bool {
	for _, m := range ms {
		if m.ns.Ino == ns {
			return true
		}
	}
	return false
}
