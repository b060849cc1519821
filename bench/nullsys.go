package bench

import (
	"context"
	"runtime"
	"sync"
	"syscall"
	"time"
)

// nullSyscalls runs ops getppid calls on each of threads locked OS
// threads at once and returns the wall time per call on one thread (ns).
// getppid does no work: what it costs is the syscall entry and exit, which
// is where a tracer hooked on every syscall exit adds its cost.
func nullSyscalls(threads, ops int) float64 {
	var wg sync.WaitGroup
	start := make(chan struct{})
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			<-start
			for range ops {
				syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
			}
		}()
	}
	// Let every goroutine reach its thread before the clock starts.
	time.Sleep(10 * time.Millisecond)
	t0 := time.Now()
	close(start)
	wg.Wait()
	return float64(time.Since(t0).Nanoseconds()) / float64(ops)
}

// NullSyscall is the null syscall loop under every variant.
func (r *Runner) NullSyscall(ctx context.Context) (samples, error) {
	return r.interleave(ctx, "null-syscall", r.variants(), r.cfg.Rounds, func(context.Context) (float64, error) {
		return nullSyscalls(2, r.cfg.NullOps), nil
	})
}
