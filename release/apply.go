package release

import (
	"bytes"
	"fmt"
	"os"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/nsthread"
)

// Apply detaches one planned copy, on a thread of its own that enters the
// namespace (nsthread.Run: never the main thread, ended afterwards; the
// process stays where it is). It refuses when the mount is no longer the
// planned one, and checks afterwards that it is gone.
func Apply(s Step) error {
	return nsthread.Run(func() error { return applyHere(s) })
}

func applyHere(s Step) error {
	// /proc as the caller sees it, opened before the thread moves: the
	// namespace's own /proc may belong to another pid namespace.
	proc, err := unix.Open("/proc", unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open /proc: %w", err)
	}
	defer unix.Close(proc)
	fd, err := unix.Open(s.Enter, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", s.Enter, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", s.Enter, err)
	}
	if uint32(st.Ino) != s.MntNS {
		return fmt.Errorf("changed since the plan: %s is mnt:[%d] now, not mnt:[%d]", s.Enter, st.Ino, s.MntNS)
	}
	// A thread shares its filesystem context (root, cwd) with the others;
	// setns into a mount namespace needs one of its own.
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return fmt.Errorf("unshare the thread's filesystem context: %w", err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("enter mnt:[%d]: %w", s.MntNS, err)
	}
	before, err := mountsHere(proc)
	if err != nil {
		return err
	}
	if err := samePlanned(before, s); err != nil {
		return err
	}
	if err := unix.Unmount(s.Where, unix.MNT_DETACH); err != nil {
		return fmt.Errorf("umount2(%s, MNT_DETACH) in mnt:[%d]: %w", s.Where, s.MntNS, err)
	}
	after, err := mountsHere(proc)
	if err != nil {
		return err
	}
	for _, m := range after {
		if m.ID == s.MountID {
			return fmt.Errorf("mount %d at %s is still in mnt:[%d] after the unmount", s.MountID, s.Where, s.MntNS)
		}
	}
	return nil
}

// mountsHere reads the mount table of the thread's namespace.
func mountsHere(proc int) ([]*mountinfo.Info, error) {
	fd, err := unix.Openat(proc, "thread-self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, fmt.Errorf("open the namespace's mountinfo: %w", err)
	}
	f := os.NewFile(uintptr(fd), "mountinfo")
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return nil, fmt.Errorf("read the namespace's mountinfo: %w", err)
	}
	return mountinfo.GetMountsFromReader(&buf, nil)
}

// samePlanned checks the mount is still the one planned: its id at the
// planned mount point, on the planned device.
func samePlanned(mounts []*mountinfo.Info, s Step) error {
	for _, m := range mounts {
		if m.ID != s.MountID {
			continue
		}
		if m.Mountpoint != s.Where {
			return fmt.Errorf("changed since the plan: mount %d is at %s now, not %s", s.MountID, m.Mountpoint, s.Where)
		}
		if d := event.MakeDev(uint32(m.Major), uint32(m.Minor)); s.Dev != 0 && d != s.Dev {
			return fmt.Errorf("changed since the plan: mount %d is device %s now, not %s", s.MountID, d, s.Dev)
		}
		return nil
	}
	return fmt.Errorf("changed since the plan: mount %d (%s) is no longer in mnt:[%d]", s.MountID, s.Where, s.MntNS)
}
