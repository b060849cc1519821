package main

import (
	"fmt"
	"os"
	"path/filepath"
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
	{"file churn (create+unlink)", 20000, fileChurn},
	{"read/write loop (pwrite+pread 64 B)", 100000, readWrite},
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
