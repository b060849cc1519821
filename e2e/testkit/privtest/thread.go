package privtest

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// JoinAndHold makes a thread of the test process (not its main one, which
// stays in its namespace) join the mount namespace of pid (setns), go
// into dir there (chdir: the thread's own cwd) and open file in it (an fd
// of the whole process). The thread stays until the test ends, then
// closes the file and ends with its goroutine (it is never unlocked), its
// cwd with it. It returns the thread's tid.
func JoinAndHold(t testing.TB, pid int, dir, file string) int {
	t.Helper()
	got, done := make(chan int), make(chan struct{})
	start := func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if unix.Gettid() == os.Getpid() {
			got <- -1 // the main thread: held until the end, try another
			<-done
			return
		}
		fail := func(what string, err error) { t.Errorf("%s: %v", what, err); got <- 0 }
		if err := unix.Unshare(unix.CLONE_FS); err != nil { // setns(CLONE_NEWNS) wants a filesystem context of its own
			fail("unshare(CLONE_FS)", err)
			return
		}
		ns, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			fail("open the mount namespace of "+strconv.Itoa(pid), err)
			return
		}
		err = unix.Setns(ns, unix.CLONE_NEWNS)
		unix.Close(ns)
		if err != nil {
			fail("setns to the mount namespace of "+strconv.Itoa(pid), err)
			return
		}
		if err := unix.Chdir(dir); err != nil {
			fail("chdir", err)
			return
		}
		fd, err := unix.Open(filepath.Join(dir, file), unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			fail("open", err)
			return
		}
		got <- unix.Gettid()
		<-done
		unix.Close(fd)
	}
	t.Cleanup(func() { close(done) })
	go start()
	tid := <-got
	if tid < 0 {
		go start()
		tid = <-got
	}
	if tid <= 0 {
		t.Fatalf("no thread of the test's in the mount namespace of %d", pid)
	}
	return tid
}
