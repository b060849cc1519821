// Package fuseserve is the FUSE server the tests kill: it opens /dev/fuse,
// mounts fuse.mntleaktest itself (mount(2), as a FUSE server running as
// root does, so the mount event's process is the server), serves an empty
// directory, and says "ready" once the kernel's INIT is answered. A test
// SIGKILLs it to leave a dead FUSE mount (every access ENOTCONN), or
// unmounts it while it runs (it then ends cleanly). Built on
// github.com/hanwen/go-fuse/v2. Only for tests.
//
// Files:
//   - fuseserve.go: Serve.
//   - fuseserver/: the program (fuseserver DIR) the recorded scenarios run.
package fuseserve
