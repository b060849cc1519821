package correlate

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
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

// clockTick is the unit of a process's start time in /proc (USER_HZ, 100
// on every Linux arch mntleak runs on).
const clockTick = 10 * time.Millisecond

// pinsFor lists the processes keeping the object's filesystem busy. With
// before (kernel monotonic ns, a failure's time) set, a process started
// after it did not cause it and is left out. The error says the search
// could not be made, or (*procfs.UnreadableError, with the pins of the
// others) that some processes could not be read.
func (c *Correlator) pinsFor(id identity, matches []match, before uint64) (map[uint32][]finding.PinRef, error) {
	devs := map[event.Dev]bool{}
	if id.dev != 0 {
		devs[id.dev] = true
	}
	for _, m := range matches {
		if m.mount != nil {
			devs[devOf(m.mount)] = true
		}
	}
	if len(devs) == 0 {
		return nil, nil
	}
	list := make([]event.Dev, 0, len(devs))
	for d := range devs {
		list = append(list, d)
	}
	sortDevs(list)
	pins, err := c.pinsOn(id, matches, list)
	var unreadable *procfs.UnreadableError
	if err != nil && !errors.As(err, &unreadable) {
		return nil, err
	}
	if before != 0 {
		// One tick of slack: a start time is rounded down to a tick.
		pins = slices.DeleteFunc(pins, func(p procfs.Pin) bool {
			return p.StartTime*uint64(clockTick) > before+uint64(clockTick)
		})
	}
	// Only processes that pin the object itself: on a shared filesystem
	// such as the root fs every process has a cwd on the device.
	var keep []finding.PinRef
	threads := threadsByPID(pins)
	for _, refs := range pinRefs(nsFilesNamed(pins, id)) {
		for _, r := range refs {
			r.MntNS = throughThread(r, threads, matches)
			if id.block || r.Pin == "blockdev-fd" || pinInObject(r, matches, id) {
				keep = append(keep, r)
			}
		}
	}
	out := map[uint32][]finding.PinRef{}
	for _, r := range keep {
		out[r.MntNS] = append(out[r.MntNS], r)
	}
	return out, err // nil, or the processes it could not read
}

// pinsOn asks for the processes pinning devs: all of them, or, when only
// the processes of the namespaces that match can yield a pin pinsFor
// keeps, those alone (a scan of every process's files and mappings is
// what a failure waits for on a node with thousands of processes), and
// none when no namespace matches. That is when the object is neither a
// block device nor a whole filesystem nor a namespace file (see
// pinInObject: a process of any namespace that holds the namespace open
// pins it) and no device is a block device's (major 0 is the anonymous
// devices': tmpfs, overlay, nsfs), so no blockdev-fd pin exists.
func (c *Correlator) pinsOn(id identity, matches []match, devs []event.Dev) ([]procfs.Pin, error) {
	inside := !id.block && id.root != "/" && id.fs != "nsfs"
	for _, d := range devs {
		inside = inside && d.Major() == 0
	}
	if inside && len(matches) == 0 {
		return nil, nil
	}
	np, ok := c.proc.(procfs.NamespacePinner)
	if !ok || !inside {
		return c.proc.Pins(devs)
	}
	// Every process of those namespaces, told by its namespace link: a
	// process forked there since the last process list (forks are not
	// traced) may be the one that pins the copy, and it is the one to name.
	// Only a process list read at this very event leaves none unknown: then
	// its members are the candidates. Else the lineage bounds them
	// (pinCandidates, pin_bound.go), or, where it cannot, every process.
	var nss []uint32
	var members []Member
	for _, m := range matches {
		if !containsNS(nss, m.ns.Ino) {
			nss = append(nss, m.ns.Ino)
			members = append(members, m.ns.Members()...)
		}
	}
	if c.scanned && c.lastScan.Equal(c.now) {
		pids := make([]int, 0, len(members))
		for _, mem := range members {
			pids = append(pids, mem.PID)
		}
		return np.PinsIn(devs, nss, pids)
	}
	return np.PinsIn(devs, nss, c.pinCandidates(nss, members))
}

func containsNS(nss []uint32, ns uint32) bool {
	for _, x := range nss {
		if x == ns {
			return true
		}
	}
	return false
}

// nsFilesNamed names, for a namespace file (nsfs: one device for every
// namespace, told by the root "net:[N]"), the open files that are that
// namespace by their inode as the namespace ("net:[N]"): one opened through
// a copy the kernel detached since shows as "/" in /proc, and it keeps the
// copy and the namespace alive all the same. The others are dropped.
func nsFilesNamed(pins []procfs.Pin, id identity) []procfs.Pin {
	ino, err := procfs.ParseNSLink(id.root)
	if id.fs != "nsfs" || err != nil {
		return pins
	}
	out := pins[:0:0]
	for _, p := range pins {
		if p.Kind == procfs.PinFD && p.Ino != 0 {
			if p.Ino != uint64(ino) {
				continue
			}
			p.Path = id.root
		}
		out = append(out, p)
	}
	return out
}

// pinInObject reports whether a pin's path lies inside the object as seen
// in the pinning process's namespace.
func pinInObject(r finding.PinRef, matches []match, id identity) bool {
	for _, m := range matches {
		if m.ns.Ino == r.MntNS && m.where != "" && Under(strings.TrimSuffix(r.Path, " (deleted)"), m.where) {
			return true
		}
	}
	// No mountinfo shows the object there (a detached copy): only a
	// filesystem of its own (not a bind of a shared one) identifies it.
	// A namespace file is told by the namespace it is (nsFilesNamed).
	return (id.root == "/" || (id.fs == "nsfs" && r.Path == id.root)) && !hasMatchIn(matches, r.MntNS)
}

func hasMatchIn(ms []match, ns uint32) bool {
	for _, m := range ms {
		if m.ns.Ino == ns {
			return true
		}
	}
	return false
}

func sortDevs(d []event.Dev) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}
