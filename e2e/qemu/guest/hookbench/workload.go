package main

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

// workload is one loop: its name, how many operations a measure runs, and
// the loop.
type workload struct {
	name string
	ops  int
	run  func(dir string, n int) error
}

var workloads = []workload{
	{"null syscall (getppid)", 200000, nullSyscall},
	{"file churn (create+unlink)", 10000, fileChurn},
	{"read/write loop (pwrite+pread 64 B)", 100000, readWrite},
	{"mount storm (tmpfs mount+umount)", 2000, mountStorm},
}

// mountStorm mounts and unmounts a tmpfs n times in a mount namespace of
// its own (a locked thread that unshares and never unlocks: the namespace
// dies with the thread), its root made private so nothing propagates out.
func mountStorm(dir string, n int) error {
	target := filepath.Join(dir, "storm")
	if err := os.MkdirAll(target, 0o700); err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		errc <- stormIn(target, n)
	}()
	return <-errc
}

func stormIn(target string, n int) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return fmt.Errorf("unshare the storm's mount namespace: %w", err)
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make / private in the storm's namespace: %w", err)
	}
	for range n {
		if err := unix.Mount("hookbench", target, "tmpfs", 0, "size=1m"); err != nil {
			return fmt.Errorf("mount tmpfs on %s: %w", target, err)
		}
		if err := unix.Unmount(target, 0); err != nil {
			return fmt.Errorf("umount %s: %w", target, err)
		}
	}
	return nil
}

func nullSyscall(_ string, n int) error {
	for range n {
		unix.Getppid()
	}
	return nil
}

func fileChurn(dir string, n int) error {
	name := filepath.Join(dir, "churn")
	for range n {
		fd, err := unix.Open(name, unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return fmt.Errorf("create %s: %w", name, err)
		}
		unix.Close(fd)
		if err := unix.Unlink(name); err != nil {
			return fmt.Errorf("unlink %s: %w", name, err)
		}
	}
	return nil
}

func readWrite(dir string, n int) error {
	name := filepath.Join(dir, "rw")
	f, err := os.Create(name)
	if err != nil {
		return err
	}
	defer os.Remove(name)
	defer f.Close()
	fd := int(f.Fd())
	buf := make([]byte, 64)
	for range n {
		if _, err := unix.Pwrite(fd, buf, 0); err != nil {
			return fmt.Errorf("pwrite %s: %w", name, err)
		}
		if _, err := unix.Pread(fd, buf, 0); err != nil {
			return fmt.Errorf("pread %s: %w", name, err)
		}
	}
	return nil
}

// measure runs w n ops on a locked thread and returns ns per operation.
func measure(w workload, dir string) (float64, error) {
	start := time.Now()
	if err := w.run(dir, w.ops); err != nil {
		return 0, err
	}
	return float64(time.Since(start).Nanoseconds()) / float64(w.ops), nil
}
