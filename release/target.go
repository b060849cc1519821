package release

import (
	"fmt"
	"os"
	"strconv"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// CopyTarget is the object of an explicit copy (release --mntns N
// --mount-id ID): the device of mount id in namespace ns, read through one
// of its processes or, when none runs in it, through a bind of its nsfs
// file or the open fd of a process holding that file; and its mount point
// there.
func CopyTarget(ns uint32, id int) (correlate.Target, string, error) {
	return copyTarget(procfs.Host{}, fileExists, ns, id)
}

// procReader is what CopyTarget and BirthID read of /proc (procfs.Host;
// a test's fake).
type procReader interface {
	Processes() ([]procfs.Process, error)
	Mountinfo(pid int) (uint32, []*procfs.Mount, error)
	NSMountinfo(file string) (uint32, []*procfs.Mount, error)
	NSFDs() ([]procfs.NSFD, error)
}

// fileExists reports whether a path can be stat'ed from here.
func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func copyTarget(h procReader, exists func(string) bool, ns uint32, id int) (correlate.Target, string, error) {
	procs, err := h.Processes()
	if err != nil {
		return correlate.Target{}, "", err
	}
	var mounts []*procfs.Mount
	found := false
	for _, task := range tasksIn(procs, ns) {
		if got, m, err := h.Mountinfo(task); err == nil && got == ns {
			mounts, found = m, true
			break
		}
	}
	if !found {
		file := nsBind(h, exists, procs, ns)
		if file == "" {
			file = nsFD(h, ns)
		}
		if file == "" {
			return correlate.Target{}, "", fmt.Errorf("no process runs in mnt:[%d], and no bind of its nsfs file nor a process holding it open was found", ns)
		}
		var got uint32
		if got, mounts, err = h.NSMountinfo(file); err != nil {
			return correlate.Target{}, "", err
		}
		if got != ns {
			return correlate.Target{}, "", fmt.Errorf("%s names mnt:[%d] now, not mnt:[%d]", file, got, ns)
		}
	}
	for _, m := range mounts {
		if m.ID == id {
			t := correlate.Target{Dev: event.MakeDev(uint32(m.Major), uint32(m.Minor))}
			if m.FSType == "nsfs" {
				t.Root = m.Root // every namespace file is on one device
			}
			return t, m.Mountpoint, nil
		}
	}
	return correlate.Target{}, "", fmt.Errorf("mnt:[%d] has no mount %d", ns, id)
}

// tasksIn lists the processes in namespace ns (by their main thread) and
// then the threads of others in it (a thread of its own that keeps it):
// /proc/ID/ns/mnt and /proc/ID/mountinfo of each are ns's.
func tasksIn(procs []procfs.Process, ns uint32) []int {
	var out, threads []int
	for _, p := range procs {
		if p.MntNS == ns {
			out = append(out, p.PID)
		}
		for _, th := range p.Threads {
			if th.MntNS == ns {
				threads = append(threads, th.TID)
			}
		}
	}
	return append(out, threads...)
}

// nsBind is a path through which the bind of namespace ns's nsfs file can
// be opened from here, or "": the bind's mount point seen through the root
// of a process of the namespace whose table shows it.
func nsBind(h procReader, exists func(string) bool, procs []procfs.Process, ns uint32) string {
	want := "mnt:[" + strconv.FormatUint(uint64(ns), 10) + "]"
	seen := map[uint32]bool{}
	for _, p := range procs {
		if seen[p.MntNS] {
			continue
		}
		seen[p.MntNS] = true
		_, mounts, err := h.Mountinfo(p.PID)
		if err != nil {
			continue
		}
		for _, m := range mounts {
			if m.FSType == "nsfs" && m.Root == want {
				if file := "/proc/" + strconv.Itoa(p.PID) + "/root" + m.Mountpoint; exists(file) {
					return file
				}
			}
		}
	}
	return ""
}

// nsFD is /proc/PID/fd/N of a process holding namespace ns's nsfs file
// open (the lowest pid and fd: the same every time), or "".
func nsFD(h procReader, ns uint32) string {
	fds, _ := h.NSFDs() // some processes unreadable: those read are enough
	best := -1
	for i, f := range fds {
		if f.NS == ns && (best < 0 || f.PID < fds[best].PID || (f.PID == fds[best].PID && f.FD < fds[best].FD)) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return "/proc/" + strconv.Itoa(fds[best].PID) + "/fd/" + strconv.Itoa(fds[best].FD)
}

// BirthID is the birth id of the live namespace with inode ns, read
// through a member's /proc/PID/ns/mnt, a bind of its nsfs file or an open
// fd of it, and the file it was read through.
func BirthID(ns uint32) (uint64, string, error) {
	return birthID(procfs.Host{}, liveKernel{}, fileExists, ns)
}

func birthID(h procReader, k kernelActs, exists func(string) bool, ns uint32) (uint64, string, error) {
	procs, err := h.Processes()
	if err != nil {
		return 0, "", err
	}
	var files []string
	if tasks := tasksIn(procs, ns); len(tasks) > 0 {
		files = append(files, "/proc/"+strconv.Itoa(tasks[0])+"/ns/mnt")
	}
	if file := nsBind(h, exists, procs, ns); file != "" {
		files = append(files, file)
	}
	if file := nsFD(h, ns); file != "" {
		files = append(files, file)
	}
	if len(files) == 0 {
		return 0, "", fmt.Errorf("no process runs in mnt:[%d], and no bind of its nsfs file nor a process holding it open was found", ns)
	}
	for _, file := range files {
		fd, ino, id, err := k.OpenNS(file)
		if err != nil {
			continue // the member exited meanwhile: the next file
		}
		k.Close(fd)
		if ino == ns {
			return id, file, nil
		}
	}
	return 0, "", fmt.Errorf("mnt:[%d]: none of %v names it now", ns, files)
}
