package nsthread

import (
	"runtime"

	"golang.org/x/sys/unix"
)

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
		done <- fn()
	}()
	return <-done
}
