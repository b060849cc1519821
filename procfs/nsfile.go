package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/internal/kmount"
	"github.com/mntleak/mntleak/internal/nsthread"
)

// nsfsMagic is the superblock magic of nsfs (NSFS_MAGIC).
const nsfsMagic = 0x6e736673

// NSMountinfo implements Proc. A namespace no process runs in has no
// /proc/PID/mountinfo to read. A kernel that reads another namespace's
// table by its id (listmount and statmount, with each mount's source:
// Linux 6.14+) is asked by the id NS_GET_MNTNS_ID gives for the file: no
// thread of mntleak's enters the namespace, so mntleak is never one of its
// holders, even for an instant. An older kernel's table is read from
// inside (nsMountinfoEntering). The open file keeps the namespace alive
// while it is read either way.
func (h Host) NSMountinfo(file string) (uint32, []*Mount, error) {
	fd, ns, err := openMountNS(file)
	if err != nil {
		return 0, nil, err
	}
	defer unix.Close(fd)
	if mounts, ok := tableByID(fd); ok {
		return ns, mounts, nil
	}
	return h.nsMountinfoEntering(file)
}

// tableByID reads the table of the namespace fd is by its id, and says
// whether the kernel could give all of it as mountinfo would (a kernel
// before 6.11 has no NS_GET_MNTNS_ID or listmount by namespace, one before
// 6.14 no source): if not, the caller reads it from inside.
func tableByID(fd int) ([]*Mount, bool) {
	id, err := kmount.NSID(fd)
	if err != nil {
		return nil, false
	}
	mounts, err := kmount.Table(id)
	if err != nil {
		return nil, false
	}
	out := make([]*Mount, len(mounts))
	var sh shapes
	for i := range mounts {
		if !mounts[i].HasSource {
			return nil, false
		}
		out[i] = entryOf(&mounts[i], &sh)
	}
	return out, true
}

// openMountNS opens file, which must be a mount namespace's nsfs file,
// and returns it and the namespace's inode.
func openMountNS(file string) (int, uint32, error) {
	fd, err := unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("open %s: %w", file, err)
	}
	var fs unix.Statfs_t
	if err := unix.Fstatfs(fd, &fs); err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("statfs %s: %w", file, err)
	}
	if fs.Type != nsfsMagic {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("%s is not a namespace file", file)
	}
	if t, err := unix.IoctlRetInt(fd, unix.NS_GET_NSTYPE); err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("namespace type of %s: %w", file, err)
	} else if t != unix.CLONE_NEWNS {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("%s is not a mount namespace's file", file)
	}
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		unix.Close(fd)
		return -1, 0, fmt.Errorf("stat %s: %w", file, err)
	}
	return fd, uint32(st.Ino), nil
}

// nsMountinfoEntering reads the table of the namespace file names from
// inside: a thread of mntleak's own (nsthread.Run: never the main thread,
// ended afterwards) enters it and reads its own
// /proc/thread-self/mountinfo, so no other work ever runs in the namespace
// and nothing holds it once the table is read. No external program is
// needed (the image has none). setns into a mount namespace needs
// CAP_SYS_ADMIN and CAP_SYS_CHROOT.
func (h Host) nsMountinfoEntering(file string) (uint32, []*Mount, error) {
	var (
		ns     uint32
		mounts []*Mount
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
func (h Host) nsMountinfoHere(file string) (uint32, []*Mount, error) {
	// /proc as the caller sees it, opened before the thread moves: the
	// namespace's own /proc, if it has one, may be another pid namespace's.
	proc, err := unix.Open(h.root(), unix.O_DIRECTORY|unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("open %s: %w", h.root(), err)
	}
	defer unix.Close(proc)
	fd, ns, err := openMountNS(file)
	if err != nil {
		return 0, nil, err
	}
	defer unix.Close(fd)
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
	mounts, err := newMountinfoParser().parse(buf.Bytes())
	if err != nil {
		return 0, nil, fmt.Errorf("parse the mount table of mnt:[%d] (%s): %w", ns, file, err)
	}
	return ns, mounts, nil
}
