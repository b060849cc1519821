package correlate

import (
	"fmt"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
	"golang.org/x/sys/unix"
)

// Sources answer what the engine needs of an event that the kernel did
// not give, asked as the event arrives, before it is recorded: by the
// time a finding names them the process may be gone (a failing
// mkfs.ext4, runc's child), the namespace's inode reused, the device
// detached. The daemon answers from /proc and sysfs; a replay asks
// nothing, the record holds the answers.
type Sources interface {
	// Command is a process's executable and command line.
	Command(pid int) (procfs.Command, error)
	// Cgroup is a process's cgroup path (the line of /proc/PID/cgroup
	// that names its container, else the unified or systemd one) and the
	// inode of its mount namespace.
	Cgroup(pid int) (cgroup string, mntNS uint32, err error)
	// BirthID is the id the kernel gave mount namespace ino, read through
	// pid (0 when it cannot be read).
	BirthID(pid int, ino uint32) uint64
	// Teardown sets ev.Teardown when ev is a failing teardown call (rbd
	// unmap, zram, dmsetup) whose device it can name; the error says why
	// a teardown call's device could not be named.
	Teardown(ev *event.Event) error
}

// Prepare is the one step before an event is recorded and handed to
// Handle: it fills in, from src, a failure's (or a namespace creator's)
// executable, the cgroup of the process of an event a finding may name
// (its container and pod, named also once it is gone), the birth id of a namespace just created (the persistent
// lineage keys a namespace by its inode and that id), and the device a
// teardown call named. The event is usable whatever it returns; the
// error names what could not be filled in.
func Prepare(ev *event.Event, src Sources) error {
	if wantsCommand(ev) {
		if cmd, err := src.Command(int(ev.PID)); err == nil {
			ev.Exe = cmd.Exe
			if ev.Cmdline == "" {
				ev.Cmdline = cmd.Cmdline
			}
		}
	}
	if wantsCgroup(ev) {
		ev.Cgroup = cgroupOf(ev, src)
	}
	if pid, ino := newNamespace(ev); ino != 0 {
		ev.NewMntNSID = src.BirthID(pid, ino)
	}
	if err := src.Teardown(ev); err != nil {
		return fmt.Errorf("name the device of %s %s: %w", ev.Syscall, ev.Path, err)
	}
	return nil
}

// wantsCommand reports whether the command of an event's process should
// be captured when the event arrives: the process may be gone by the time
// a finding names it (a failing mkfs.ext4, the unshare of a daemon).
func wantsCommand(ev *event.Event) bool {
	return isTrigger(ev) || ev.Kind == event.KindUnshare || ev.Kind == event.KindNewNSFork
}

// wantsCgroup reports whether the cgroup of an event's process should be
// read when the event arrives: the events whose process a finding may name
// (a failure's caller, a namespace's creator, the process that made a
// mount that leaked or propagated), which may be gone, with its pod, by
// then. A process already gone when its event is read has none.
func wantsCgroup(ev *event.Event) bool {
	return wantsCommand(ev) || (mountFamily(ev.Kind) && ev.Ret == 0)
}

// cgroupOf is the cgroup of an event's process or, when it has exited
// already (mount(8) run by a container's shell exits as soon as its mount
// is made), of its parent while that runs in the same mount namespace (a
// fork inherits the cgroup; a container's init, whose parent is the
// runtime's shim on the node, is not taken for the shim); "" otherwise.
func cgroupOf(ev *event.Event, src Sources) string {
	if cg, _, err := src.Cgroup(int(ev.PID)); err == nil {
		return cg
	}
	if ev.PPID == 0 {
		return ""
	}
	if cg, ns, err := src.Cgroup(int(ev.PPID)); err == nil && ns == ev.MntNS {
		return cg
	}
	return ""
}

// newNamespace returns, for an event that created a mount namespace (an
// unshare, a CLONE_NEWNS child), a process in it and its inode: the
// namespace's birth id is read through that process when the event arrives.
func newNamespace(ev *event.Event) (pid int, ino uint32) {
	switch {
	case ev.Kind == event.KindUnshare && ev.Ret == 0 && ev.MntNSAfter != ev.MntNSBefore:
		return int(ev.PID), ev.MntNSAfter
	case ev.Kind == event.KindNewNSFork:
		return int(ev.ChildPID), ev.ChildMntNS
	}
	return 0, 0
}

// mountFamily reports whether events of kind change mount tables.
func mountFamily(k event.Kind) bool {
	switch k {
	case event.KindMount, event.KindUmount, event.KindPivotRoot, event.KindOpenTree,
		event.KindMoveMount, event.KindFsmount, event.KindMountSetattr:
		return true
	}
	return false
}

// isTrigger reports whether an event is a failure worth explaining.
func isTrigger(ev *event.Event) bool {
	switch ev.Kind {
	case event.KindFailure:
		return failedWith(ev, unix.EBUSY)
	case event.KindUmount:
		return failedWith(ev, unix.EINVAL) || failedWith(ev, unix.EBUSY)
	case event.KindMount, event.KindMoveMount:
		return failedWith(ev, unix.ENOENT) || failedWith(ev, unix.EBUSY)
	}
	return false
}
