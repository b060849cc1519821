package nsthread

import (
	"fmt"
	"runtime"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ThreadName is the name (comm) of Run's thread while fn runs: a thread of
// mntleak's that is in another namespace for a moment, to read or act
// there, is told by it from a process's thread that lives there (the
// tests' oracle counts the latter as keeping the namespace, not the
// former).
const ThreadName = "mntleak-setns"

// Run runs fn on a locked OS thread that is not the main thread and ends
// with it, and returns fn's error. fn may setns, unshare(CLONE_FS) or
// otherwise change its thread; what it returns through captured variables
// is visible to the caller once Run returns.
func Run(fn func() error) error {
	done := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		if unix.Gettid() == unix.Getpid() {
			// The main thread, which the runtime would keep: it stays
			// locked here, unchanged, so the goroutine Run starts cannot be
			// scheduled on it, and is handed back afterwards.
			done <- Run(fn)
			runtime.UnlockOSThread()
			return
		}
		// Never unlocked: the thread ends with this goroutine.
		name := []byte(ThreadName + "\x00")
		if err := unix.Prctl(unix.PR_SET_NAME, uintptr(unsafe.Pointer(&name[0])), 0, 0, 0); err != nil {
			done <- fmt.Errorf("name thread %d %s: %w", unix.Gettid(), ThreadName, err)
			return
		}
		done <- fn()
	}()
	return <-done
}
