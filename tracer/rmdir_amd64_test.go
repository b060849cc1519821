package tracer_test

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// rmdir is rmdir(2) itself: unix.Rmdir calls unlinkat(2). arm64 has no
// rmdir(2) (rmdir_arm64_test.go).
func rmdir(path string) error {
	p, err := unix.BytePtrFromString(path)
	if err != nil {
		return err
	}
	if _, _, errno := unix.Syscall(unix.SYS_RMDIR, uintptr(unsafe.Pointer(p)), 0, 0); errno != 0 {
		return errno
	}
	return nil
}
