package tracer_test

import "golang.org/x/sys/unix"

// rmdir is what rmdir(1) calls on arm64, which has no rmdir(2):
// unlinkat(AT_FDCWD, path, AT_REMOVEDIR).
func rmdir(path string) error {
	return unix.Unlinkat(unix.AT_FDCWD, path, unix.AT_REMOVEDIR)
}
