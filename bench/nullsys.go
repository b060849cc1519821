package bench

import (
	"context"
	"runtime"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// nullSyscalls runs ops getppid calls on each of threads locked OS
// threads at once and returns the wall time per call on one thread and the
// CPU time per call, both in ns. getppid does no work: what it costs is the
// syscall entry and exit, which is where a tracer hooked on every syscall
// exit adds its cost.
func nullSyscalls(threads, ops int) (wallNS, cpuNS float64) {
	var wg sync.WaitGroup
	start := make(chan struct{})
	cpu := make([]time.Duration, threads)
	for i := range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			<-start
			c0 := threadCPU()
			for range ops {
				syscall.RawSyscall(syscall.SYS_GETPPID, 0, 0, 0)
			}
			cpu[i] = threadCPU() - c0
		}()
	}
	// Let every goroutine reach its thread before the clock starts.
	time.Sleep(10 * time.Millisecond)
	t0 := time.Now()
	close(start)
	wg.Wait()
	var sum time.Duration
	for _, c := range cpu {
		sum += c
	}
	return float64(time.Since(t0).Nanoseconds()) / float64(ops), float64(sum.Nanoseconds()) / float64(ops*threads)
}

// threadCPU is the calling thread's CPU time (user + system): the BPF
// programs run in the thread that makes the syscall, so their cost is in
// it, while time lost to other processes on a shared machine is not.
func threadCPU() time.Duration {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts); err != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

// NullSyscall is the null syscall loop under every variant: wall ns/op,
// and CPU ns/op in cpu.
func (r *Runner) NullSyscall(ctx context.Context) (wall, cpu samples, err error) {
	cpu = samples{}
	variants := append(r.variants(), FloorEntry)
	wall, err = r.interleave(ctx, "null-syscall", variants, r.cfg.Rounds, func(_ context.Context, v Variant) (float64, error) {
		w, c := nullSyscalls(2, r.cfg.NullOps)
		cpu[v] = append(cpu[v], c)
		return w, nil
	})
	return wall, cpu, err
}
