package tracer_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
)

// TestRmdirMountpointBusy: rmdir(8) of a mountpoint in the caller's own
// namespace, with a relative path, gives an EBUSY event with the absolute path.
func TestRmdirMountpointBusy(t *testing.T) {
	privtest.RequireCommands(t, "rmdir")
	c := startTracer(t)
	base := t.TempDir()
	mnt := privtest.Mkdir(t, filepath.Join(base, "busy"))
	privtest.Mount(t, "mntleak-busy", mnt, "tmpfs", 0, "")

	cmd := exec.Command("rmdir", "busy")
	cmd.Dir = base
	if err := cmd.Run(); err == nil {
		t.Fatal("rmdir of a mountpoint succeeded")
	}
	ev := c.waitFor(t, "rmdir EBUSY", func(e *event.Event) bool {
		return e.Kind == event.KindFailure && e.PID == uint32(cmd.Process.Pid)
	})
	if ev.Path != mnt || ev.Syscall != "rmdir" || ev.Errno != "EBUSY" || ev.Ret != -int64(unix.EBUSY) || ev.Comm != "rmdir" {
		t.Errorf("got %s %q ret=%d errno=%q comm=%q, want rmdir %q EBUSY by rmdir", ev.Syscall, ev.Path, ev.Ret, ev.Errno, ev.Comm, mnt)
	}
}

// TestUnlinkatDirfdRelative: unlinkat(dirfd, "busy", AT_REMOVEDIR) on a
// mountpoint; the path is made absolute from the dirfd in the kernel.
func TestUnlinkatDirfdRelative(t *testing.T) {
	c := startTracer(t)
	base := t.TempDir()
	mnt := privtest.Mkdir(t, filepath.Join(base, "busy"))
	privtest.Mount(t, "mntleak-busy", mnt, "tmpfs", 0, "")
	dirfd, err := unix.Open(base, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	var unlinkErr error
	tid := onThread(func() { unlinkErr = unix.Unlinkat(dirfd, "busy", unix.AT_REMOVEDIR) })
	// The fd is gone before userspace reads the event; the path must not need it.
	unix.Close(dirfd)
	if unlinkErr != unix.EBUSY {
		t.Fatalf("unlinkat: %v, want EBUSY", unlinkErr)
	}
	ev := c.waitFor(t, "unlinkat EBUSY", func(e *event.Event) bool {
		return e.Kind == event.KindFailure && e.TID == uint32(tid)
	})
	if ev.Path != mnt || ev.Syscall != "unlinkat" || ev.Errno != "EBUSY" {
		t.Errorf("got %s %q %s, want unlinkat %q EBUSY", ev.Syscall, ev.Path, ev.Errno, mnt)
	}
}

// TestBlockDeviceMountedElsewhere: a loop device whose filesystem is mounted
// only in another namespace. An exclusive open (O_EXCL, and mkfs.ext4) and a
// re-read of its partition table (an ioctl on an fd) fail with EBUSY; every
// event names /dev/loopN, the ioctl one with the device number.
func TestBlockDeviceMountedElsewhere(t *testing.T) {
	privtest.RequireCommands(t, "mkfs.ext4", "blockdev")
	c := startTracer(t)
	dev := privtest.LoopDevice(t, 32)
	dir := privtest.Mkdir(t, filepath.Join(t.TempDir(), "vol"))
	privtest.StartHolder(t, "private", "mount "+dev+" "+dir)

	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		t.Fatal(err)
	}
	wantRDev := event.MakeDev(unix.Major(st.Rdev), unix.Minor(st.Rdev))

	t.Run("open O_EXCL", func(t *testing.T) {
		var openErr error
		tid := onThread(func() {
			fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
			if err == nil {
				unix.Close(fd)
			}
			openErr = err
		})
		if openErr != unix.EBUSY {
			t.Fatalf("open O_EXCL: %v, want EBUSY", openErr)
		}
		ev := c.waitFor(t, "open EBUSY", func(e *event.Event) bool { return e.Kind == event.KindFailure && e.TID == uint32(tid) })
		if ev.Path != dev || ev.Syscall != "openat" || ev.FD != -1 {
			t.Errorf("got %s %q fd=%d, want openat %q fd=-1", ev.Syscall, ev.Path, ev.FD, dev)
		}
	})
	t.Run("mkfs.ext4", func(t *testing.T) {
		cmd := exec.Command("mkfs.ext4", "-q", "-F", dev)
		if err := cmd.Run(); err == nil {
			t.Fatal("mkfs.ext4 of a device mounted elsewhere succeeded")
		}
		ev := c.waitFor(t, "mkfs EBUSY", func(e *event.Event) bool { return e.Kind == event.KindFailure && e.PID == uint32(cmd.Process.Pid) })
		if ev.Path != dev || ev.Comm != "mkfs.ext4" || ev.Errno != "EBUSY" {
			t.Errorf("got %s %q by %q %s, want %q by mkfs.ext4 EBUSY", ev.Syscall, ev.Path, ev.Comm, ev.Errno, dev)
		}
		// Read by the kernel side in mkfs's own context: it may be gone now.
		if ev.Cmdline != "mkfs.ext4 -q -F "+dev {
			t.Errorf("cmdline %q, want %q", ev.Cmdline, "mkfs.ext4 -q -F "+dev)
		}
	})
	t.Run("ioctl BLKRRPART", func(t *testing.T) {
		cmd := exec.Command("blockdev", "--rereadpt", dev)
		if err := cmd.Run(); err == nil {
			t.Fatal("BLKRRPART of a device mounted elsewhere succeeded")
		}
		ev := c.waitFor(t, "ioctl EBUSY", func(e *event.Event) bool { return e.Kind == event.KindFailure && e.PID == uint32(cmd.Process.Pid) })
		if ev.Path != dev || ev.Syscall != "ioctl" || ev.FD < 0 || ev.RDev != wantRDev {
			t.Errorf("got %s %q fd=%d rdev=%s, want ioctl %q rdev=%s", ev.Syscall, ev.Path, ev.FD, ev.RDev, dev, wantRDev)
		}
	})
}

// TestSuccessfulUnlinksCostNothing: 10,000 files created and unlinked
// produce no event at all; then one failing rmdir on the same thread, whose
// event proves the tracer was reading all along (the ring buffer is FIFO).
func TestSuccessfulUnlinksCostNothing(t *testing.T) {
	c := startTracer(t)
	base := t.TempDir()
	files := privtest.Mkdir(t, filepath.Join(base, "files"))
	marker := privtest.Mkdir(t, filepath.Join(base, "marker"))
	privtest.Mount(t, "mntleak-marker", marker, "tmpfs", 0, "")

	const n = 10000
	var start unix.Timespec
	tid := onThread(func() {
		// Events from this thread before now (the marker mount above may
		// have run on the same OS thread) are not part of the count.
		_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &start)
		for i := 0; i < n; i++ {
			p := files + "/f" + strconv.Itoa(i)
			fd, err := unix.Open(p, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
			if err != nil {
				t.Errorf("create: %v", err)
				return
			}
			unix.Close(fd)
			if err := unix.Unlink(p); err != nil {
				t.Errorf("unlink: %v", err)
				return
			}
		}
		if err := unix.Rmdir(marker); err != unix.EBUSY {
			t.Errorf("marker rmdir: %v, want EBUSY", err)
		}
	})
	c.waitFor(t, "marker", func(e *event.Event) bool {
		return e.Kind == event.KindFailure && e.TID == uint32(tid) && e.Path == marker
	})
	evs := c.matching(func(e *event.Event) bool { return e.TID == uint32(tid) && e.MonoNS >= uint64(start.Nano()) })
	if len(evs) != 1 {
		t.Errorf("%d events from the thread that made %d creates and unlinks, want only the marker: %+v", len(evs), n, evs)
	}
	if entries, _ := os.ReadDir(files); len(entries) != 0 {
		t.Errorf("%d files left", len(entries))
	}
}
