package correlate

import (
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

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

func sortDevs(d []event.Dev) {
	for i := 1; i < len(d); i++ {
		for j := i; j > 0 && d[j] < d[j-1]; j-- {
			d[j], d[j-1] = d[j-1], d[j]
		}
	}
}
