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
// own (a private namespace on a locked thread), and returns the wall time.
// Every file is openat + close + unlinkat: three syscall exits that the
// catch-all failure program sees and lets go (none fails with EBUSY).
func fileChurn(dir string, n int) (time.Duration, error) {
	var wall time.Duration
	err := onPrivateThread(dir, func(uint32) error {
		base := filepath.Join(dir, "f")
		names := make([]string, n)
		for i := range names {
			names[i] = base + strconv.Itoa(i)
		}
		t0 := time.Now()
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
		wall = time.Since(t0)
		return nil
	})
	return wall, err
}

// FileChurn is the file churn under every variant.
func (r *Runner) FileChurn(ctx context.Context) (samples, error) {
	dir := filepath.Join(r.dir, "churn")
	if err := mkdirs(dir); err != nil {
		return nil, err
	}
	return r.interleave(ctx, "file-churn", r.variants(), r.cfg.Rounds, func(context.Context) (float64, error) {
		d, err := fileChurn(dir, r.cfg.ChurnFiles)
		return d.Seconds(), err
	})
}
