package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

// StormResult is one mount storm under the daemon.
type StormResult struct {
	Duration  time.Duration
	Generated int64   // mount + umount syscalls the workers made
	Received  int64   // mount + umount events of the storm's namespace the daemon printed
	Lost      float64 // mntleak_events_lost_total, every kind
	Failed    int64   // syscalls that failed (should be none)
	CPU       float64 // daemon CPU / storm wall time (1 = one core)
	Rate      float64 // syscalls per second
	RSS       int64   // the daemon's resident set after the drain, bytes
	BPFMaps   int64   // of which the pages of its BPF maps (the ring buffer)
}

// stormWorker is a running storm worker process.
type stormWorker struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	out   *bufio.Reader
	ns    uint32
	pid   int
	ended bool
}

func (r *Runner) startStormWorker(threads, premounts int) (*stormWorker, error) {
	exe, err := selfExe()
	if err != nil {
		return nil, err
	}
	dir := filepath.Join(r.dir, "storm")
	if err := mkdirs(dir); err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, StormWorkerCommand, dir, strconv.Itoa(threads), strconv.Itoa(premounts))
	// Go makes / of a new mount namespace private (MS_REC|MS_PRIVATE)
	// before exec: nothing the worker mounts propagates anywhere.
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNS}
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = r.logWriter()
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start storm worker: %w", err)
	}
	w := &stormWorker{cmd: cmd, in: in, out: bufio.NewReader(out), pid: cmd.Process.Pid}
	line, err := w.out.ReadString('\n')
	if err != nil || strings.TrimSpace(line) != "ready" {
		w.kill()
		return nil, fmt.Errorf("storm worker (pid %d) not ready: %q %v", w.pid, line, err)
	}
	if w.ns, err = mountNS(w.pid); err != nil {
		w.kill()
		return nil, err
	}
	return w, nil
}

func (w *stormWorker) kill() {
	if !w.ended {
		_ = w.cmd.Process.Kill()
		_ = w.cmd.Wait()
		w.ended = true
	}
}

// finish stops the storm and returns the worker's counts; the worker
// keeps its namespace until release.
func (w *stormWorker) finish() (mounts, umounts, failed int64, err error) {
	if _, err := io.WriteString(w.in, "stop\n"); err != nil {
		return 0, 0, 0, fmt.Errorf("stop storm worker %d: %w", w.pid, err)
	}
	line, err := w.out.ReadString('\n')
	if err != nil {
		return 0, 0, 0, fmt.Errorf("storm worker %d counts: %w", w.pid, err)
	}
	if _, err := fmt.Sscanf(line, "count %d %d %d", &mounts, &umounts, &failed); err != nil {
		return 0, 0, 0, fmt.Errorf("storm worker %d counts %q: %w", w.pid, line, err)
	}
	return mounts, umounts, failed, nil
}

// release lets the worker exit, taking its namespace with it.
func (w *stormWorker) release() error {
	if w.ended {
		return nil
	}
	_ = w.in.Close()
	err := w.cmd.Wait()
	w.ended = true
	if err != nil {
		return fmt.Errorf("storm worker %d: %w", w.pid, err)
	}
	return nil
}

// isStormEvent reports whether a daemon stdout line is a mount or umount
// event (the daemon prints only the storm namespace's events: --mntns).
func isStormEvent(line []byte) bool {
	return bytes.HasPrefix(line, []byte(`{"kind":"mount",`)) || bytes.HasPrefix(line, []byte(`{"kind":"umount",`))
}

// MountStorm runs bind mount + umount pairs on every core for d, in a
// worker's private namespace, under the daemon (given args as extra trace
// flags), and checks that it received every one.
func (r *Runner) MountStorm(ctx context.Context, d time.Duration, args ...string) (StormResult, error) {
	return r.CrowdedMountStorm(ctx, d, 0, args...)
}

// CrowdedMountStorm is MountStorm in a namespace that holds premounts
// binds besides the storm's own.
func (r *Runner) CrowdedMountStorm(ctx context.Context, d time.Duration, premounts int, args ...string) (StormResult, error) {
	res := StormResult{}
	w, err := r.startStormWorker(r.cfg.StormThreads, premounts)
	if err != nil {
		return res, err
	}
	defer w.kill()
	var received atomic.Int64
	dm, err := StartDaemon(ctx, DaemonOptions{
		Binary: r.cfg.Mntleak, LogFile: r.logPath("daemon-storm" + strings.Join(args, "") + ".log"),
		Args: append([]string{"--mntns", strconv.FormatUint(uint64(w.ns), 10)}, args...),
		OnEvent: func(line []byte) {
			if isStormEvent(line) {
				received.Add(1)
			}
		},
	})
	if err != nil {
		return res, err
	}
	defer dm.Stop()
	before, err := dm.Scrape()
	if err != nil {
		return res, err
	}
	meter, err := startCPU(dm.PID())
	if err != nil {
		return res, err
	}
	t0 := time.Now()
	if _, err := io.WriteString(w.in, "go\n"); err != nil {
		return res, fmt.Errorf("start storm worker %d: %w", w.pid, err)
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	m, u, f, err := w.finish()
	res.Duration = time.Since(t0)
	if err != nil {
		return res, err
	}
	res.Generated, res.Failed = m+u, f
	res.Rate = float64(res.Generated) / res.Duration.Seconds()
	// Drain: the daemon may run behind; wait until it has printed every
	// event, has stopped making progress for 3s, or 15s have passed (what
	// it has not read by then was lost: the kernel counts it).
	last, lastAt, drainEnd := received.Load(), time.Now(), time.Now().Add(15*time.Second)
	for received.Load() < res.Generated && time.Since(lastAt) < 3*time.Second && time.Now().Before(drainEnd) {
		time.Sleep(50 * time.Millisecond)
		if n := received.Load(); n != last {
			last, lastAt = n, time.Now()
		}
	}
	used := time.Duration(0)
	if _, used, err = meter.share(); err != nil {
		return res, err
	}
	res.CPU = used.Seconds() / res.Duration.Seconds()
	after, err := dm.Scrape()
	if err != nil {
		return res, err
	}
	res.Lost = lost(after) - lost(before)
	res.Received = received.Load()
	mem, err := memoryOf(dm.PID())
	if err != nil {
		return res, err
	}
	parts, err := memoryPartsOf(dm.PID())
	if err != nil {
		return res, err
	}
	res.RSS, res.BPFMaps = mem.RSS, parts.BPFMaps
	if err := w.release(); err != nil {
		return res, err
	}
	return res, ctx.Err()
}

// StormBaselineRate runs the storm with no tracer for d and returns the
// syscall rate, the reference for the tracer's cost on mount syscalls.
func (r *Runner) StormBaselineRate(ctx context.Context, d time.Duration) (float64, error) {
	w, err := r.startStormWorker(r.cfg.StormThreads, 0)
	if err != nil {
		return 0, err
	}
	defer w.kill()
	t0 := time.Now()
	if _, err := io.WriteString(w.in, "go\n"); err != nil {
		return 0, fmt.Errorf("start storm worker %d: %w", w.pid, err)
	}
	select {
	case <-time.After(d):
	case <-ctx.Done():
	}
	m, u, _, err := w.finish()
	wall := time.Since(t0)
	if err != nil {
		return 0, err
	}
	if err := w.release(); err != nil {
		return 0, err
	}
	return float64(m+u) / wall.Seconds(), ctx.Err()
}

// logStorm prints one storm's figures, named by what it ran with.
func (r *Runner) logStorm(what string, res StormResult) {
	r.logf("  storm, %s: %d syscalls in %s (%.0f/s), %d received, %v lost, %d failed, daemon CPU %.0f%%, RSS %.1f MiB (BPF maps %.1f MiB)",
		what, res.Generated, res.Duration.Round(time.Millisecond), res.Rate, res.Received, res.Lost, res.Failed,
		100*res.CPU, float64(res.RSS)/(1<<20), float64(res.BPFMaps)/(1<<20))
}
