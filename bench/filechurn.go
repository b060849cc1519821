package bench

import (
	"context"
	"fmt"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// fileChurn creates and unlinks n files, one at a time, in a tmpfs of its
// own (a private namespace on a locked thread), and returns the wall time
// and the thread's CPU time.
// Every file is openat + close + unlinkat: three syscall exits that
// mntleak's dispatcher sees and lets go (no handler for them, none fails
// with EBUSY).
func fileChurn(dir string, n int) (wall, cpu time.Duration, err error) {
	err = onPrivateThread(dir, func(uint32) error {
		base := filepath.Join(dir, "f")
		names := make([]string, n)
		for i := range names {
			names[i] = base + strconv.Itoa(i)
		}
		t0, c0 := time.Now(), threadCPU()
		for _, name := range names {
			fd, err := unix.Open(name, unix.O_CREAT|unix.O_WRONLY|unix.O_EXCL|unix.O_CLOEXEC, 0o600)
			if err != nil {
				return fmt.Errorf("create %s: %w", name, err)
			}
			unix.Close(fd)
			if err := unix.Unlink(name); err != nil {
				return fmt.Errorf("unlink %s: %w", name, err)
			}
		}
		wall, cpu = time.Since(t0), threadCPU()-c0
		return nil
	})
	return wall, cpu, err
}

// FileChurn is the file churn under every variant: wall seconds, and CPU
// seconds in cpu.
func (r *Runner) FileChurn(ctx context.Context) (wall, cpu samples, err error) {
	dir := filepath.Join(r.dir, "churn")
	if err := mkdirs(dir); err != nil {
		return nil, nil, err
	}
	cpu = samples{}
	wall, err = r.interleave(ctx, "file-churn", r.variants(), r.cfg.Rounds, func(_ context.Context, v Variant) (float64, error) {
		w, c, err := fileChurn(dir, r.cfg.ChurnFiles)
		cpu[v] = append(cpu[v], c.Seconds())
		return w.Seconds(), err
	})
	return wall, cpu, err
}
