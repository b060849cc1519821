package tracer_test

import "runtime"

// runtimeLockForever locks the calling goroutine to its OS thread without
// unlocking: when the goroutine returns, the runtime ends the thread.
func runtimeLockForever() { runtime.LockOSThread() }

// runtimeUnlock undoes runtimeLockForever.
func runtimeUnlock() { runtime.UnlockOSThread() }
