package procfs

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"

	"github.com/mntleak/mntleak/event"
)

// Pins implements Proc. It stats the /proc links (following them for the
// device number only; nothing is opened) and reads the maps files.
func (h Host) Pins(devs []event.Dev) ([]Pin, error) {
	if len(devs) == 0 {
		return nil, nil
	}
	pids, err := h.pids()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", h.root(), err)
	}
	return h.pinsAmong(pids, devs, nil)
}

// PIDs implements Lister.
func (h Host) PIDs() ([]int, error) {
	pids, err := h.pids()
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", h.root(), err)
	}
	return pids, nil
}

// PinsIn implements NamespacePinner: Pins for the processes whose mount
// namespace is one of mntns (among candidates, when given).
func (h Host) PinsIn(devs []event.Dev, mntns []uint32, candidates []int) ([]Pin, error) {
	if len(devs) == 0 || len(mntns) == 0 {
		return nil, nil
	}
	in := make(map[uint32]bool, len(mntns))
	for _, ns := range mntns {
		in[ns] = true
	}
	pids := candidates
	if pids == nil {
		var err error
		if pids, err = h.pids(); err != nil {
			return nil, fmt.Errorf("list %s: %w", h.root(), err)
		}
	}
	return h.pinsAmong(pids, devs, in)
}

// pinsAmong lists how the processes pids pin devs; with in, only those in
// one of its mount namespaces, told by one link each before anything else
// is read. Only the processes that pin something are described (stat,
// mount namespace, cgroup): almost none are, and a failure has the
// process list already. A process whose files could not be read (not one
// that is gone) is counted: the pins come with an *UnreadableError.
func (h Host) pinsAmong(pids []int, devs []event.Dev, in map[uint32]bool) ([]Pin, error) {
	want := make(map[event.Dev]bool, len(devs))
	for _, d := range devs {
		want[d] = true
	}
	return collect(len(pids), func(i int, s *scratch) ([]Pin, bool) {
		if in != nil {
			link, err := s.readlink(h.root() + "/" + strconv.Itoa(pids[i]) + "/ns/mnt")
			if err != nil {
				return nil, isDenied(err)
			}
			ns, err := ParseNSLink(link)
			if err != nil || (!in[ns] && !threadIn(threadsElsewhereOf(h.root()+"/"+strconv.Itoa(pids[i]), ns, s), in)) {
				return nil, false
			}
		}
		pins, unreadable := h.pinsOf(pids[i], want, s)
		if len(pins) == 0 {
			return nil, unreadable
		}
		p, err := h.process(pids[i], s, true)
		if err != nil || (in != nil && !in[p.MntNS] && !threadIn(p.Threads, in)) { // gone, a kernel thread, or moved (setns) meanwhile
			return nil, unreadable
		}
		for j := range pins {
			pins[j].Process = p
		}
		return pins, unreadable
	})
}

// threadsOf lists the threads of the process at dir that are in another
// mount namespace than its main thread (Process.Threads), nil for a
// process of one thread (threadsElsewhereOf tells it).
func (h Host) threadsOf(dir string, s *scratch) []Thread {
	link, err := s.readlink(dir + "/ns/mnt")
	if err != nil {
		return nil
	}
	main, err := ParseNSLink(link)
	if err != nil {
		return nil
	}
	return threadsElsewhereOf(dir, main, s)
}

// threadIn reports whether one of threads is in one of the namespaces in.
func threadIn(threads []Thread, in map[uint32]bool) bool {
	for _, th := range threads {
		if in[th.MntNS] {
			return true
		}
	}
	return false
}

// UnreadableError says how many processes' files a pin search could not
// read (permission, not a process that exited): the pins found are the
// others'. An unprivileged caller sees little more than its own.
type UnreadableError struct {
	Processes int
}

func (e *UnreadableError) Error() string {
	if e.Processes == 1 {
		return "1 process unreadable"
	}
	return strconv.Itoa(e.Processes) + " processes unreadable"
}

// isDenied tells a read refused for want of privilege from one of a
// process that is gone.
func isDenied(err error) bool {
	return errors.Is(err, fs.ErrPermission)
}

// pinsOf lists how one process pins the wanted devices, without its
// description, and whether some of its files could not be read for want of
// privilege. A link is read (for its path) only once its device matched:
// most never do.
func (h Host) pinsOf(pid int, want map[event.Dev]bool, s *scratch) ([]Pin, bool) {
	denied := false
	var pins []Pin
	dir := h.root() + "/" + strconv.Itoa(pid)
	add := func(kind PinKind, dev event.Dev, path string) {
		pins = append(pins, Pin{Kind: kind, Dev: dev, Path: path})
	}
	for _, link := range []struct {
		name string
		kind PinKind
	}{{"cwd", PinCwd}, {"root", PinRoot}} {
		dev, _, err := statDevErr(dir + "/" + link.name)
		denied = denied || isDenied(err)
		if err == nil && want[dev] {
			target, _ := os.Readlink(dir + "/" + link.name)
			add(link.kind, dev, target)
		}
	}
	for _, th := range h.threadsOf(dir, s) {
		// A thread in a mount namespace of its own has a filesystem
		// context of its own (unshare and setns need one): its cwd and
		// root are in that namespace; /proc/PID/cwd shows the main thread's.
		for _, link := range []struct {
			name string
			kind PinKind
		}{{"cwd", PinCwd}, {"root", PinRoot}} {
			p := dir + "/task/" + strconv.Itoa(th.TID) + "/" + link.name
			if dev, _, err := statDevErr(p); err == nil && want[dev] {
				target, _ := os.Readlink(p)
				add(link.kind, dev, target)
				pins[len(pins)-1].TID = th.TID
			}
		}
	}
	fds, err := readDirNames(dir + "/fd")
	denied = denied || isDenied(err)
	for _, fd := range fds {
		p := dir + "/fd/" + fd
		dev, rdev, ino, err := statCached(p)
		if err != nil {
			continue
		}
		switch {
		case rdev != 0 && want[rdev]:
			dev = rdev
		case !want[dev]:
			continue
		}
		target, _ := os.Readlink(p)
		kind := PinFD
		if dev == rdev {
			kind = PinBlockFD
		}
		add(kind, dev, target)
		pin := &pins[len(pins)-1]
		if n, err := strconv.Atoi(fd); err == nil {
			pin.FD = &n
		}
		if kind == PinFD {
			pin.Ino = ino // a namespace file is told by its inode: nsfs is one device
		}
	}
	b, err := s.read(dir + "/maps")
	if err == nil {
		for _, m := range mapsOn(b, want) {
			add(PinMap, m.dev, m.path)
		}
	}
	return pins, denied || isDenied(err)
}
