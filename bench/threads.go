package bench

import (
	"fmt"
	"os"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/internal/nsthread"
)

// onPrivateThread runs fn on a locked OS thread that first moves into a
// mount namespace of its own, made private throughout, with a tmpfs at dir
// (which must exist). The thread is never unlocked: when fn returns, the Go
// runtime ends the thread, and with it the namespace and every mount made
// in it, whatever fn left behind. ns receives the namespace's inode before
// fn runs.
func onPrivateThread(dir string, fn func(ns uint32) error) error {
	return nsthread.Run(func() error {
		if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
			return fmt.Errorf("unshare a mount namespace: %w", err)
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			return fmt.Errorf("make the private namespace's / private: %w", err)
		}
		if err := unix.Mount("bench", dir, "tmpfs", 0, "size=64m"); err != nil {
			return fmt.Errorf("mount tmpfs on %s: %w", dir, err)
		}
		var st unix.Stat_t
		if err := unix.Stat(fmt.Sprintf("/proc/self/task/%d/ns/mnt", unix.Gettid()), &st); err != nil {
			return fmt.Errorf("mount namespace of thread %d: %w", unix.Gettid(), err)
		}
		return fn(uint32(st.Ino))
	})
}

// mkdirs creates each directory (and its parents).
func mkdirs(dirs ...string) error {
	for _, d := range dirs {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	return nil
}
