package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/internal/nsthread"
)

// nsfsMagic is the superblock magic of nsfs (NSFS_MAGIC).
const nsfsMagic = 0x6e736673

// NSMountinfo implements Proc. A namespace no process runs in has no
// /proc/PID/mountinfo to read: a thread of mntleak's own (nsthread.Run:
// never the main thread, ended afterwards) enters it and reads its own
// /proc/thread-self/mountinfo, so no other work ever runs in the namespace
// and nothing holds it once the table is read. No external program is
// needed (the image has none). setns into a mount namespace needs
// CAP_SYS_ADMIN and CAP_SYS_CHROOT.
func (h Host) NSMountinfo(file string) (uint32, []*mountinfo.Info, error) {
	var (
		ns     uint32
		mounts []*mountinfo.Info
	)
	err := nsthread.Run(func() error {
		var err error
		ns, mounts, err = h.nsMountinfoHere(file)
		return err
	})
	if err != nil {
		return 0, nil, err
	}
	return ns, mounts, nil
}

// nsMountinfoHere enters the namespace file names on the calling thread,
// one of nsthread.Run's.
func (h Host) nsMountinfoHere(file string) (uint32, []*mountinfo.Info, error) {
	// /proc as the caller sees it, opened before the thread moves: the
	// namespace's own /proc, if it has one, may be another pid namespace's.
	proc, err := unix.Open(h.root(), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("open %s: %w", h.root(), err)
	}
	defer unix.Close(proc)
	fd, err := unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("open %s: %w", file, err)
	}
	defer unix.Close(fd)
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		return 0, nil, fmt.Errorf("statfs %s: %w", file, err)
	}
	if fs.Type != nsfsMagic {
		return 0, nil, fmt.Errorf("%s is not a namespace file", file)
	}
	if t, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE); err != nil {
		return 0, nil, fmt.Errorf("namespace type of %s: %w", file, err)
	} else if t != unix.CLONE_NEWNS {
		return 0, nil, fmt.Errorf("%s is not a mount namespace's file", file)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return 0, nil, fmt.Errorf("stat %s: %w", file, err)
	}
	ns := uint32(st.Ino)
	// A thread shares its filesystem context (root, cwd) with the others;
	// setns into a mount namespace needs one of its own.
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		return 0, nil, fmt.Errorf("read the mount table of mnt:[%d] (%s): unshare the thread's filesystem context: %w", ns, file, err)
	}
	if err := unix.Setns(fd, unix.CLONE_NEWNS); err != nil {
		if errors.Is(err, unix.EPERM) {
			return 0, nil, fmt.Errorf("read the mount table of mnt:[%d] (%s): enter it: %w (needs CAP_SYS_ADMIN and CAP_SYS_CHROOT)", ns, file, err)
		}
		return 0, nil, fmt.Errorf("read the mount table of mnt:[%d] (%s): enter it: %w", ns, file, err)
	}
	mfd, err := unix.Openat(proc, "thread-self/mountinfo", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("read the mount table of mnt:[%d] (%s): open %s/thread-self/mountinfo: %w", ns, file, h.root(), err)
	}
	f := os.NewFile(uintptr(mfd), h.root()+"/thread-self/mountinfo")
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(f); err != nil {
		return 0, nil, fmt.Errorf("read the mount table of mnt:[%d] (%s): %w", ns, file, err)
	}
	mounts, err := mountinfo.GetMountsFromReader(&buf, nil)
	if err != nil {
		return 0, nil, fmt.Errorf("parse the mount table of mnt:[%d] (%s): %w", ns, file, err)
	}
	for _, m := range mounts {
		intern(m)
	}
	return ns, mounts, nil
}
