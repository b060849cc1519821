package release

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// kernelActs are the calls through which release reads and changes the
// kernel's state: open a namespace file (its inode and birth id), read a
// namespace's table by its birth id, tell where a process runs, enter a
// namespace, open the top mount at a path with its unique id, detach a
// mount through an open file. Checker's decisions (every refusal, every
// identity compared at the moment of acting) are made on their answers;
// liveKernel makes them on the running kernel, and a test's fake answers
// them instead, so the decisions are tested without root. Each live act
// is the one call it names, with no decision of its own.
type kernelActs interface {
	// OpenNS opens the first of a|b|... that opens: a namespace file, with
	// its inode and birth id (NS_GET_MNTNS_ID).
	OpenNS(alternatives string) (fd int, ino uint32, id uint64, err error)
	Close(fd int)
	// ReadTable reads the mounts of the namespace born with id (listmount
	// and statmount).
	ReadTable(id uint64) ([]Mount, error)
	// RunsIn reports whether process pid runs in mnt:[ino] now (true when
	// it cannot be told: it may).
	RunsIn(pid, ino uint32) bool
	// OpenProc opens the caller's /proc (O_PATH), before the thread moves.
	OpenProc() (int, error)
	// Enter moves the calling thread into the namespace of fd (a
	// filesystem context of its own first: setns needs one).
	Enter(fd int, ns uint32) error
	// TopMount opens the top mount at path in the thread's namespace
	// (O_PATH, no symlink followed) and reads its unique mount id (statx
	// STATX_MNT_ID_UNIQUE; ok false when the kernel gave none).
	TopMount(path string, ns uint32) (fd int, unique uint64, ok bool, err error)
	// Detach unmounts (MNT_DETACH) the mount open as fd, named through
	// proc (the caller's /proc: thread-self/fd/N), never by a path.
	Detach(proc, fd int, where string, ns uint32) error
}

// kernel is c's acts: the live kernel's unless a test gave others.
func (c Checker) kernel() kernelActs {
	if c.acts != nil {
		return c.acts
	}
	return liveKernel{}
}

// liveKernel makes the acts on the running kernel.
type liveKernel struct{}

func (liveKernel) OpenNS(alternatives string) (int, uint32, uint64, error) {
	return openNS(alternatives)
}

func (liveKernel) Close(fd int) { unix.Close(fd) }

func (liveKernel) ReadTable(id uint64) ([]Mount, error) { return readTable(id) }

func (liveKernel) RunsIn(pid, ino uint32) bool { return runsIn(pid, ino) }

func (liveKernel) OpenProc() (int, error) {
	fd, err := unix.Open("/proc", unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, fmt.Errorf("open /proc: %w", err)
	}
	return fd, nil
}

func (liveKernel) Enter(fd int, ns uint32) error {
	// A thread shares its filesystem context (root, cwd) with the others;
	// setns into a mount namespace needs one of its own.
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare the thread's filesystem context: %w", err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("enter mnt:[%d]: %w", ns, err)
	}
	return nil
}

func (liveKernel) TopMount(path string, ns uint32) (int, uint64, bool, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, 0, false, fmt.Errorf("open %s in mnt:[%d]: %w", path, ns, err)
	}
	var stx unix.Statx_t
	if err := unix.Statx(fd, "", unix.AT_EMPTY_PATH, unix.STATX_MNT_ID_UNIQUE, &stx); err != nil {
		unix.Close(fd)
		return -1, 0, false, fmt.Errorf("statx %s in mnt:[%d]: %w", path, ns, err)
	}
	return fd, stx.Mnt_id, stx.Mask&unix.STATX_MNT_ID_UNIQUE != 0, nil
}

func (liveKernel) Detach(proc, fd int, where string, ns uint32) error {
	if err := unix.Fchdir(proc); err != nil {
		return fmt.Errorf("chdir to the caller's /proc: %w", err)
	}
	if err := unix.Unmount("thread-self/fd/"+strconv.Itoa(fd), unix.MNT_DETACH); err != nil {
		return fmt.Errorf("umount2(%s, MNT_DETACH) in mnt:[%d]: %w", where, ns, err)
	}
	return nil
}

// errNoUniqueID: statx gave no unique mount id.
var errNoUniqueID = errors.New("statx gave no unique mount id: the kernel cannot bind the act to the planned mount")
