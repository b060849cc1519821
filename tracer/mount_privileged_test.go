package tracer_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
)

// TestMountEvents performs real mount(2) calls and checks every decoded field.
func TestMountEvents(t *testing.T) {
	c := startTracer(t)
	hostNS := privtest.MountNS(t, "self")
	base := t.TempDir()

	src := privtest.Mkdir(t, filepath.Join(base, "src"))
	privtest.Mount(t, "mntleak-src", src, "tmpfs", 0, "size=1m")
	privtest.Mkdir(t, filepath.Join(src, "sub"))
	privtest.Mount(t, "mntleak-sub", filepath.Join(src, "sub"), "tmpfs", 0, "size=1m")

	tests := []struct {
		name      string
		source    string
		target    string
		fstype    string
		flags     uintptr
		data      string
		wantSrc   string
		wantNames string
		bindFirst bool // a propagation change needs a mount to change
	}{
		{"tmpfs", "mntleak-tmpfs", "tmpfs", "tmpfs", unix.MS_NOSUID | unix.MS_NODEV, "size=1m,mode=0755", "mntleak-tmpfs", "MS_NOSUID|MS_NODEV", false},
		{"bind", src, "bind", "", unix.MS_BIND, "", src, "MS_BIND", false},
		{"rbind", src, "rbind", "", unix.MS_BIND | unix.MS_REC, "", src, "MS_BIND|MS_REC", false},
		{"make-rprivate", "", "rprivate", "", unix.MS_REC | unix.MS_PRIVATE, "", "", "MS_REC|MS_PRIVATE", true},
		{"make-rslave", "", "rslave", "", unix.MS_REC | unix.MS_SLAVE, "", "", "MS_REC|MS_SLAVE", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := filepath.Join(base, tt.target)
			privtest.Mkdir(t, target)
			if tt.bindFirst {
				privtest.Mount(t, src, target, "", unix.MS_BIND|unix.MS_REC, "")
			}
			before := time.Now()
			tid := onThread(func() {
				if err := unix.Mount(tt.source, target, tt.fstype, tt.flags, tt.data); err != nil {
					t.Errorf("mount: %v", err)
				}
			})
			after := time.Now()
			t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
			ev := c.waitFor(t, "mount "+tt.name, func(e *event.Event) bool {
				return e.Kind == event.KindMount && e.TID == uint32(tid) && e.Target == target && e.Flags == uint64(tt.flags)
			})
			checkHeader(t, &ev, tid, hostNS, before, after)
			if ev.Syscall != "mount" || ev.Ret != 0 || ev.Errno != "" {
				t.Errorf("syscall=%q ret=%d errno=%q, want mount = 0", ev.Syscall, ev.Ret, ev.Errno)
			}
			if ev.Source != tt.wantSrc || ev.FSType != tt.fstype || ev.Data != tt.data {
				t.Errorf("source=%q fstype=%q data=%q, want %q %q %q", ev.Source, ev.FSType, ev.Data, tt.wantSrc, tt.fstype, tt.data)
			}
			if ev.FlagNames != tt.wantNames {
				t.Errorf("flag names %q, want %q", ev.FlagNames, tt.wantNames)
			}
			if len(ev.Truncated) != 0 {
				t.Errorf("truncated %v", ev.Truncated)
			}
		})
	}
}

// TestMountRelativePaths runs mount(8) from a working directory with
// relative source and target: the kernel side must make both absolute.
func TestMountRelativePaths(t *testing.T) {
	privtest.RequireCommands(t, "mount")
	c := startTracer(t)
	base := t.TempDir()
	privtest.Mkdir(t, filepath.Join(base, "a"))
	privtest.Mkdir(t, filepath.Join(base, "b"))
	cmd := exec.Command("mount", "--bind", "a", "b")
	cmd.Dir = base
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("mount --bind a b: %v\n%s", err, out)
	}
	t.Cleanup(func() { _ = unix.Unmount(filepath.Join(base, "b"), unix.MNT_DETACH) })
	ev := c.waitFor(t, "relative bind", func(e *event.Event) bool {
		return e.Kind == event.KindMount && e.PID == uint32(cmd.Process.Pid)
	})
	if ev.Source != filepath.Join(base, "a") || ev.Target != filepath.Join(base, "b") {
		t.Errorf("source=%q target=%q, want absolute %s/a and %s/b", ev.Source, ev.Target, base, base)
	}
	if ev.Comm != "mount" {
		t.Errorf("comm %q, want mount", ev.Comm)
	}
}

// TestUmountNotMountedHere: a tmpfs mounted only in another (private)
// namespace; umount2 of its path from the host namespace gets EINVAL.
func TestUmountNotMountedHere(t *testing.T) {
	c := startTracer(t)
	dir := privtest.Mkdir(t, filepath.Join(t.TempDir(), "elsewhere"))
	holder := privtest.StartHolder(t, "private", "mount -t tmpfs mntleak-elsewhere "+dir)
	hostNS := privtest.MountNS(t, "self")
	if holder.MntNS == hostNS {
		t.Fatal("holder shares the host namespace")
	}
	var umountErr error
	tid := onThread(func() { umountErr = unix.Unmount(dir, 0) })
	if umountErr != unix.EINVAL {
		t.Fatalf("umount2 from the host: %v, want EINVAL", umountErr)
	}
	ev := c.waitFor(t, "umount EINVAL", func(e *event.Event) bool {
		return e.Kind == event.KindUmount && e.TID == uint32(tid)
	})
	if ev.Target != dir || ev.Ret != -int64(unix.EINVAL) || ev.Errno != "EINVAL" || ev.MntNS != hostNS {
		t.Errorf("got target=%q ret=%d errno=%q mntns=%d, want %q -EINVAL in %d", ev.Target, ev.Ret, ev.Errno, ev.MntNS, dir, hostNS)
	}
	if !ev.Failed() {
		t.Error("Failed() = false")
	}
}

// TestUmountFlags: a lazy unmount reports MNT_DETACH.
func TestUmountFlags(t *testing.T) {
	c := startTracer(t)
	dir := t.TempDir()
	if err := unix.Mount("mntleak-lazy", dir, "tmpfs", 0, ""); err != nil {
		t.Fatal(err)
	}
	tid := onThread(func() {
		if err := unix.Unmount(dir, unix.MNT_DETACH); err != nil {
			t.Errorf("umount2: %v", err)
		}
	})
	ev := c.waitFor(t, "umount", func(e *event.Event) bool { return e.Kind == event.KindUmount && e.TID == uint32(tid) })
	if ev.Target != dir || ev.Ret != 0 || ev.FlagNames != "MNT_DETACH" {
		t.Errorf("got %q ret=%d flags=%q, want %q 0 MNT_DETACH", ev.Target, ev.Ret, ev.FlagNames, dir)
	}
}

// TestPivotRoot: pivot_root(".", "old") from inside the new root. The
// paths are resolved at exit: after a successful call they are as seen from
// the new root ("/" and "/old"); a failed call (new_root not a mount point)
// moved nothing, so its paths are the directories it was given.
func TestPivotRoot(t *testing.T) {
	privtest.RequireCommands(t, "pivot_root", "unshare")
	c := startTracer(t)
	root := privtest.Mkdir(t, filepath.Join(t.TempDir(), "newroot"))
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		"mount -t tmpfs mntleak-root "+root+" && mkdir "+root+"/old && cd "+root+" && exec pivot_root . old")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pivot_root: %v\n%s", err, out)
	}
	ev := c.waitFor(t, "pivot_root", func(e *event.Event) bool {
		return e.Kind == event.KindPivotRoot && e.PID == uint32(cmd.Process.Pid)
	})
	if ev.NewRoot != "/" || ev.PutOld != "/old" || ev.Ret != 0 {
		t.Errorf("new_root=%q put_old=%q ret=%d, want \"/\" \"/old\" 0", ev.NewRoot, ev.PutOld, ev.Ret)
	}

	plain := privtest.Mkdir(t, filepath.Join(t.TempDir(), "plain"))
	privtest.Mkdir(t, filepath.Join(plain, "old"))
	fail := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		"cd "+plain+" && exec pivot_root . old")
	if out, err := fail.CombinedOutput(); err == nil {
		t.Fatalf("pivot_root into a directory that is not a mount point succeeded\n%s", out)
	}
	ev = c.waitFor(t, "failed pivot_root", func(e *event.Event) bool {
		return e.Kind == event.KindPivotRoot && e.PID == uint32(fail.Process.Pid)
	})
	if ev.NewRoot != plain || ev.PutOld != plain+"/old" || ev.Ret >= 0 {
		t.Errorf("new_root=%q put_old=%q ret=%d, want %q %q and an error", ev.NewRoot, ev.PutOld, ev.Ret, plain, plain+"/old")
	}
}

// checkHeader asserts the common header of an event caused by this process
// on thread tid between before and after.
func checkHeader(t *testing.T, ev *event.Event, tid int, mntns uint32, before, after time.Time) {
	t.Helper()
	if ev.PID != ownPID() || ev.TID != uint32(tid) || ev.PPID != uint32(os.Getppid()) || ev.UID != 0 {
		t.Errorf("pid=%d tid=%d ppid=%d uid=%d, want %d %d %d 0", ev.PID, ev.TID, ev.PPID, ev.UID, ownPID(), tid, os.Getppid())
	}
	if ev.MntNS != mntns {
		t.Errorf("mntns %d, want %d", ev.MntNS, mntns)
	}
	if want := filepath.Base(os.Args[0]); !strings.HasPrefix(want, ev.Comm) || ev.Comm == "" {
		t.Errorf("comm %q, want a prefix of %q", ev.Comm, want)
	}
	if ev.CgroupID == 0 {
		t.Error("cgroup id 0")
	}
	// The wall clock is mapped from CLOCK_MONOTONIC; allow for the offset
	// measurement and scheduling.
	slack := 50 * time.Millisecond
	if ev.Time.Before(before.Add(-slack)) || ev.Time.After(after.Add(slack)) {
		t.Errorf("time %v outside [%v, %v]", ev.Time, before, after)
	}
	if ev.SyscallNr < 0 || ev.Syscall == "" || strings.HasPrefix(ev.Syscall, "syscall_") {
		t.Errorf("syscall %d %q", ev.SyscallNr, ev.Syscall)
	}
}

// TestMountOntoProcFD: runc mounts onto "/proc/self/fd/N", an O_PATH fd it
// opened inside the rootfs; the event names the directory behind the fd.
func TestMountOntoProcFD(t *testing.T) {
	c := startTracer(t)
	dir := privtest.Mkdir(t, filepath.Join(t.TempDir(), "rootfs", "etc"))
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	procfd := "/proc/self/fd/" + strconv.Itoa(fd)
	tid := onThread(func() {
		if err := unix.Mount("mntleak-procfd", procfd, "tmpfs", 0, ""); err != nil {
			t.Errorf("mount onto %s: %v", procfd, err)
		}
	})
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	ev := c.waitFor(t, "mount onto a procfd", func(e *event.Event) bool { return e.Kind == event.KindMount && e.TID == uint32(tid) })
	if ev.Target != dir {
		t.Errorf("target %q, want %q (resolved from %s)", ev.Target, dir, procfd)
	}
}
