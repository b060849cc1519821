package release

import (
	"errors"
	"os"
	"runtime"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLiveActsFail: each live act that fails says which call failed on
// what, and hands back no fd (-1) but an error, also without root: a
// namespace file that does not open or is no namespace's, a path with no
// mount to open, entering through a file that is no namespace's (setns:
// EINVAL before any privilege check), detaching through a /proc that is
// no open fd (EBADF) and a directory that is no mount (EPERM without
// root, EINVAL with it). Enter and Detach run on a locked thread with a
// filesystem context of its own that ends with its goroutine, so the
// test's other threads keep their cwd and namespace. What is left: a
// /proc that does not open (OpenProc), a fstat of an open namespace file
// that fails (openNS), and a setns or umount2 that succeeds (root: the
// privileged release tests of cmd/mntleak).
func TestLiveActsFail(t *testing.T) {
	k := liveKernel{}
	for _, file := range []string{"/nonexistent/ns", "/proc/self/status", "/nonexistent/ns|/proc/self/status"} {
		if fd, _, _, err := k.OpenNS(file); fd != -1 || err == nil {
			t.Errorf("OpenNS(%s): fd %d, %v: want -1 and an error", file, fd, err)
		}
	}
	if fd, _, _, err := k.TopMount("/nonexistent/x", 7); fd != -1 || !errors.Is(err, unix.ENOENT) {
		t.Errorf("TopMount of a missing path: fd %d, %v: want -1 and ENOENT", fd, err)
	}
	dir := t.TempDir()
	onThread := func(f func() error) error {
		done := make(chan error)
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			if err := unix.Unshare(unix.CLONE_FS); err != nil {
				done <- err
				return
			}
			done <- f()
		}()
		return <-done
	}
	file, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	err = onThread(func() error { return k.Enter(int(file.Fd()), 7) })
	if !errors.Is(err, unix.EINVAL) || !strings.HasPrefix(err.Error(), "enter mnt:[7]: ") {
		t.Errorf("Enter through a directory: %v, want enter mnt:[7]: EINVAL", err)
	}
	err = onThread(func() error { return k.Detach(-1, int(file.Fd()), "/srv/vol", 7) })
	if !errors.Is(err, unix.EBADF) || !strings.HasPrefix(err.Error(), "chdir to the caller's /proc: ") {
		t.Errorf("Detach through no /proc: %v, want chdir to the caller's /proc: EBADF", err)
	}
	proc, err := k.OpenProc()
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close(proc)
	err = onThread(func() error { return k.Detach(proc, int(file.Fd()), "/srv/vol", 7) })
	if !(errors.Is(err, unix.EPERM) || errors.Is(err, unix.EINVAL)) || !strings.HasPrefix(err.Error(), "umount2(/srv/vol, MNT_DETACH) in mnt:[7]: ") {
		t.Errorf("Detach of a directory that is no mount: %v, want umount2(/srv/vol, MNT_DETACH) in mnt:[7]: EPERM or EINVAL", err)
	}
}
