// Package nsthread runs a function on an OS thread of its own, one it may
// move into another namespace (setns) and that is never used again: the
// thread ends with the function's goroutine, so no other goroutine ever
// runs in the namespace it entered, and nothing holds that namespace once
// the function returns.
//
// The thread is never the process's main thread. The Go runtime does not
// end the main thread when the goroutine locked to it exits: it parks it
// where it is. A main thread that had entered a mount namespace would stay
// in it for the process's life, holding it, and /proc/PID/ns/mnt (the main
// thread's) would name it as the process's namespace.
//
// Files: run.go (Run, ThreadName); run_test.go (the function's thread and its name, the main
// thread's namespace afterwards, from a test goroutine and from the main
// goroutine with GOMAXPROCS=1, where the function's goroutine would
// otherwise run on the main thread).
package nsthread
