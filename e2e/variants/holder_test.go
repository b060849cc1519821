package variants

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/fuseserve"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// cloneEnv names the script the test binary runs as a clone(CLONE_NEWNS)
// child when started as the helper: os/exec makes the child with clone,
// so the namespace comes from clone, not unshare.
const cloneEnv = "MNTLEAK_VARIANT_CLONE"

// mountEnv names the directory the test binary mounts a tmpfs on when
// started as the mounter helper: a process that makes a mount itself and
// stays (a CSI node plugin), so the mount event's pid is a live process.
const mountEnv = "MNTLEAK_VARIANT_MOUNT"

// threadEnv names the directory of the thread helper: a Go program, started
// as the test binary, whose one locked OS thread (not the main one)
// unshares a mount namespace once DIR/go exists, writes its tid to DIR/tid
// and ends with its goroutine (the runtime ends a thread still locked when
// its goroutine returns); the process stays in its namespace until killed.
const threadEnv = "MNTLEAK_VARIANT_THREAD"

// threadStaysEnv, set to 1 with threadEnv, makes the thread helper's
// thread stay: after its unshare it makes its namespace's root private
// (as unshare(1) does; unshare(2) keeps the propagation the copies had),
// writes its tid and blocks, locked, until the process is killed. Its
// namespace is then kept by that thread alone: /proc/PID/ns/mnt is the
// main thread's, /proc/PID/task/TID/ns/mnt the thread's.
const threadStaysEnv = "MNTLEAK_VARIANT_THREAD_STAYS"

// threadCwdEnv, with threadStaysEnv, names the directory the staying
// thread changes into once its namespace is made: its own cwd (unshare
// of CLONE_NEWNS gives the thread a filesystem context of its own), in
// its namespace's view, while its main thread's stays where it was.
const threadCwdEnv = "MNTLEAK_VARIANT_THREAD_CWD"

// threadSlaveEnv, set to 1 with threadStaysEnv, makes the staying
// thread's namespace root a slave (it receives the node's unmounts)
// instead of private.
const threadSlaveEnv = "MNTLEAK_VARIANT_THREAD_SLAVE"

func TestMain(m *testing.M) {
	if target := os.Getenv(mountEnv); target != "" {
		if err := syscall.Mount("csi-vol", target, "tmpfs", 0, ""); err != nil {
			fmt.Fprintln(os.Stderr, "mount", target+":", err)
			os.Exit(1)
		}
		fmt.Println("ready")
		select {} // until killed
	}
	if dir := os.Getenv(fuseEnv); dir != "" {
		if err := fuseserve.Serve(dir, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	if dir := os.Getenv(threadEnv); dir != "" {
		os.Exit(unshareThread(dir))
	}
	if script := os.Getenv(cloneEnv); script != "" {
		cmd := exec.Command("sh", "-c", script)
		cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
		cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNS}
		if err := cmd.Run(); err != nil {
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(privtest.Main(m))
}

// errMainThread: the goroutine ran on the main thread, whose unshare would
// move the whole process.
var errMainThread = errors.New("on the main thread")

// unshareThread is the thread helper (threadEnv).
func unshareThread(dir string) int {
	fmt.Println("ready")
	for {
		if _, err := os.Stat(filepath.Join(dir, "go")); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	runtime.LockOSThread() // the main goroutine keeps the thread it is on
	done := make(chan error)
	for tries := 0; ; tries++ {
		go func() {
			runtime.LockOSThread() // never unlocked once unshared: the thread ends with the goroutine
			if unix.Gettid() == os.Getpid() {
				runtime.UnlockOSThread()
				done <- errMainThread
				return
			}
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				done <- fmt.Errorf("unshare(CLONE_NEWNS): %w", err)
				return
			}
			stays := os.Getenv(threadStaysEnv) == "1"
			if stays {
				if err := stayIn(); err != nil {
					done <- err
					return
				}
			}
			done <- os.WriteFile(filepath.Join(dir, "tid"), []byte(strconv.Itoa(unix.Gettid())), 0o600)
			if stays {
				select {} // the thread stays in its namespace until the process is killed
			}
		}()
		err := <-done
		if errors.Is(err, errMainThread) && tries < 100 {
			continue
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		select {} // until killed
	}
}

// stayIn readies the staying thread's namespace (threadStaysEnv): its
// root private, or a slave (threadSlaveEnv), and the thread's own cwd in
// it (threadCwdEnv).
func stayIn() error {
	prop, name := uintptr(unix.MS_PRIVATE), "rprivate"
	if os.Getenv(threadSlaveEnv) == "1" {
		prop, name = unix.MS_SLAVE, "rslave"
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|prop, ""); err != nil {
		return fmt.Errorf("make / %s in the thread's namespace: %w", name, err)
	}
	if dir := os.Getenv(threadCwdEnv); dir != "" {
		if err := unix.Chdir(dir); err != nil {
			return fmt.Errorf("chdir %s in the thread's namespace: %w", dir, err)
		}
	}
	return nil
}
