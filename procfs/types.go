package procfs

import (
	"errors"
	"io/fs"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// Proc is the correlator's view of /proc.
type Proc interface {
	// Processes lists every process (thread-group leaders).
	Processes() ([]Process, error)
	// Mountinfo returns the mount table of pid's mount namespace, and that
	// namespace, so a caller holding a stale pid (reused by a process
	// elsewhere) can tell the table is not the one it wanted.
	Mountinfo(pid int) (uint32, []*Mount, error)
	// Pins lists the processes whose cwd, root, open files or mapped files
	// are on one of devs, or that hold one of devs open as a block device.
	// A copy of a mount detached by the kernel shows in no mountinfo, yet
	// such a process still keeps its filesystem busy.
	Pins(devs []event.Dev) ([]Pin, error)
	// BlockDevice returns the device number of the block device at path
	// (as seen from mntleak's own namespace).
	BlockDevice(path string) (event.Dev, error)
	// HostNS returns the host's mount namespace: pid 1's, else kthreadd's
	// (pid 2, in the initial namespace), else mntleak's own.
	HostNS() (uint32, error)
	// Command returns a process's executable and command line.
	Command(pid int) (Command, error)
	// RealPath resolves the symbolic links in an absolute path as pid sees
	// it (inside its root: /var/run/x is /run/x), and returns pid's mount
	// namespace, so a caller holding a stale pid can tell. A missing tail
	// is kept as it is.
	RealPath(pid int, path string) (string, uint32, error)
	// NSMountinfo returns the mount table of the mount namespace an nsfs
	// file names (a bind of it, or /proc/PID/fd/N of an open one): a
	// namespace no process runs in has no /proc/PID/mountinfo to read.
	NSMountinfo(file string) (uint32, []*Mount, error)
	// MntNSID returns pid's mount namespace and the id the kernel gave it
	// at its birth (NS_GET_MNTNS_ID; never reused while the machine runs,
	// unlike the inode): a namespace remembered by inode is the same one
	// only if the id is the same.
	MntNSID(pid int) (uint32, uint64, error)
	// NSFDs lists the processes holding a mount namespace other than their
	// own open (an nsfs file: an open /proc/PID/ns/mnt, a runtime's pinned
	// namespace fd), which keeps that namespace, and its mounts, alive
	// when no process runs in it.
	NSFDs() ([]NSFD, error)
}

// NSFD is one open file of a mount namespace held by a process.
type NSFD struct {
	Process
	FD int    `json:"fd"`
	NS uint32 `json:"ns"` // the namespace it is
}

// Command is what a process runs, and who it is now: its comm (an exec
// since it was last listed renames it) and its start time (a pid reused by
// another process has another).
type Command struct {
	Exe       string `json:"exe,omitempty"`
	Cmdline   string `json:"cmdline,omitempty"` // arguments joined by spaces, capped
	Comm      string `json:"comm,omitempty"`
	StartTime uint64 `json:"start_time,omitempty"`
}

// Process is one process, identified by PID and StartTime together: a pid
// is reused, a (pid, start time) pair is not.
type Process struct {
	PID       int    `json:"pid"`
	PPID      int    `json:"ppid"`
	StartTime uint64 `json:"start_time"` // clock ticks after boot (stat field 22)
	Comm      string `json:"comm"`
	MntNS     uint32 `json:"mntns"`
	Cgroup    string `json:"cgroup,omitempty"` // the most specific cgroup path
	// Threads are the threads of the process, other than its main one,
	// that are in another mount namespace than it (a thread that unshared
	// or entered one and stays: /proc/PID/task/TID/ns/mnt): each keeps its
	// namespace alive. mntleak's own passing reader threads are left out.
	Threads []Thread `json:"threads,omitempty"`
}

// Thread is one thread of a process in a mount namespace of its own.
type Thread struct {
	TID   int    `json:"tid"`
	MntNS uint32 `json:"mntns"`
}

// PinKind says how a process pins a filesystem.
type PinKind string

// Ways a process pins a filesystem.
const (
	PinCwd     PinKind = "cwd"
	PinRoot    PinKind = "root"
	PinFD      PinKind = "fd"
	PinMap     PinKind = "map"
	PinBlockFD PinKind = "blockdev-fd" // the device itself is open
)

// Pin is one process holding one of the devices asked about.
type Pin struct {
	Process
	Kind PinKind   `json:"pin"`
	Dev  event.Dev `json:"dev"`
	Path string    `json:"path,omitempty"` // as /proc shows it (may say "(deleted)")
	// FD is the descriptor's number, for an open file (fd, blockdev-fd).
	FD *int `json:"fd,omitempty"`
	// Ino is the open file's inode (fd): a namespace file (nsfs, one
	// device for all) is told by it.
	Ino uint64 `json:"ino,omitempty"`
	// TID is the thread whose cwd or root this is, when it is not the
	// main thread's: a thread in a mount namespace of its own (one of
	// Process.Threads) has a filesystem context of its own, and its cwd
	// and root are in that namespace (/proc/PID/task/TID/cwd).
	TID int `json:"tid,omitempty"`
}

// NamespacePinner is implemented by a Proc that can limit the pin search
// to the processes of some mount namespaces, for a caller that knows no
// other process's pin could matter: it reads one link per process to tell
// its namespace instead of its cwd, root, every open file and every
// mapping. With candidates, only those pids are looked at (the processes
// the caller cannot rule out of mntns; each is still checked to be there,
// by its threads too). The
// Recorder does not implement it, so a recorded stream holds the full
// answers and a replay asks what the recording answered.
type NamespacePinner interface {
	PinsIn(devs []event.Dev, mntns []uint32, candidates []int) ([]Pin, error)
}

// ProcessLister is implemented by a Proc whose process list also tells
// what Processes leaves out but the processes that are gone: the kernel's
// own threads (PF_KTHREAD; none is ever named as a pin), and the processes
// it could not read. A caller that bounds a pin search by the processes it
// knows tells the kernel threads apart by it, instead of reading their
// links at every search, and still reads the others. The Recorder does
// not implement it (see NamespacePinner).
type ProcessLister interface {
	ProcessList() (ProcessList, error)
}

// ProcessReader is implemented by a Proc that reads chosen processes
// as ProcessList reads each (comm, start time, mount namespace, cgroup,
// threads elsewhere): a caller told by the tracer which few processes are
// in a namespace reads those, not the whole of /proc. Processes gone, or
// kernel threads, are left out; one that cannot be read is an error. The
// Recorder does not implement it (see NamespacePinner).
type ProcessReader interface {
	ReadProcesses(pids []int) ([]Process, error)
}

// ProcessList is one read of /proc: the processes, the kernel threads with
// their pid, comm, start time and mount namespace, and the pids of the
// processes that could not be read.
type ProcessList struct {
	Procs      []Process
	Kernel     []Process
	Unreadable []int
}

// Lister is implemented by a Proc that lists the pids in /proc (one
// getdents of the directory, nothing read of any process), in the order a
// search without candidates takes them: a caller that knows where most
// processes are tells the others apart by it, and hands NamespacePinner
// those alone. The Recorder does not implement it (see NamespacePinner).
type Lister interface {
	PIDs() ([]int, error)
}

// IsGone reports whether an answer's error says the process is gone (its
// /proc directory no longer exists). A recorded answer keeps only the
// error's text, so the text is what a replay tells it by.
func IsGone(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return true
	}
	msg := err.Error()
	return strings.HasSuffix(msg, fs.ErrNotExist.Error()) || strings.HasSuffix(msg, unix.ENOENT.Error()) || strings.HasSuffix(msg, unix.ESRCH.Error())
}
