package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/internal/nsthread"
)

// CrowdResult holds what was measured with many processes and namespaces
// present: failure-to-finding latency, startup, and why/audit.
type CrowdResult struct {
	Processes, Namespaces int // counted on the machine, not only the benchmark's
	Trials                int
	Latencies             []float64 // seconds, call to finding logged, one per explained failure
	Delivered             []float64 // seconds, call to the finding's line read from the daemon's stderr
	StartupBare           []float64 // seconds, before the crowd was started
	StartupCrowd          []float64
	StartupBareCPU        []float64 // the daemon's CPU seconds to "tracing"
	StartupCrowdCPU       []float64
	Why, Audit            []float64
	// FailureCPU is the daemon's CPU time (user + system) over the
	// latency trials, per trial, in seconds: what a failure costs the
	// daemon, which the load of a shared machine does not stretch as it
	// stretches the wall time.
	FailureCPU float64
	// NoNotes: the same trials (on paths of their own) under a daemon run
	// with --mount-notes=false, right after, in the same crowd: the
	// kernel's mount notes' effect on the failure path.
	NoNotes LatencySamples
}

// LatencySamples are one daemon's latency trials.
type LatencySamples struct {
	Trials     int
	Latencies  []float64 // seconds, call to finding logged
	Delivered  []float64 // seconds, call to the finding's line read
	FailureCPU float64   // the daemon's CPU seconds per trial
}

// crowdLifetime bounds every sleeper: should the benchmark die without
// cleaning up, its crowd goes by itself.
const crowdLifetime = 30 * time.Minute

// Crowd starts Processes processes, Namespaces of them in mount namespaces
// of their own, then measures startup, latency and why/audit among them.
func (r *Runner) Crowd(ctx context.Context) (*CrowdResult, error) {
	res := &CrowdResult{}
	var err error
	if res.StartupBare, res.StartupBareCPU, err = r.startups(ctx, r.cfg.StartupRepeats); err != nil {
		return res, err
	}
	n, err := startNode("private")
	if err != nil {
		return res, err
	}
	defer n.close()
	g := &group{}
	defer g.kill()
	for range r.cfg.Namespaces {
		if err := n.do(func() error { _, err := g.sleeper(crowdLifetime, true); return err }); err != nil {
			return res, err
		}
	}
	for range r.cfg.Processes - r.cfg.Namespaces {
		if _, err := g.sleeper(crowdLifetime, false); err != nil {
			return res, err
		}
	}
	// The failures: umount2 in the host namespace of directories that are
	// mount points only in the first holder's namespace (EINVAL there,
	// explained by the copy elsewhere). Each path fails once: the daemon
	// folds repeats of one failure.
	paths := make([]string, 2*r.cfg.LatencyTrials) // the second half: --mount-notes=false
	for i := range paths {
		paths[i] = filepath.Join(r.dir, "lat", strconv.Itoa(i))
	}
	if err := mkdirs(paths...); err != nil {
		return res, err
	}
	if err := mountIn(g.cmds[0].Process.Pid, paths); err != nil {
		return res, err
	}
	res.Processes, res.Namespaces = census()
	r.logf("  crowd: %d processes, %d mount namespaces on the machine", res.Processes, res.Namespaces)
	if res.StartupCrowd, res.StartupCrowdCPU, err = r.startups(ctx, r.cfg.StartupRepeats); err != nil {
		return res, err
	}
	on, err := r.latency(ctx, paths[:r.cfg.LatencyTrials], nil, "daemon-latency.log")
	res.Trials, res.Latencies, res.Delivered, res.FailureCPU = on.Trials, on.Latencies, on.Delivered, on.FailureCPU
	if err != nil {
		return res, err
	}
	if res.NoNotes, err = r.latency(ctx, paths[r.cfg.LatencyTrials:], []string{"--mount-notes=false"}, "daemon-latency-no-notes.log"); err != nil {
		return res, err
	}
	for range r.cfg.CommandRepeats {
		w, err := r.timeCommand(ctx, "why", "--state-dir", "", paths[0])
		if err != nil {
			return res, err
		}
		a, err := r.timeCommand(ctx, "audit")
		if err != nil {
			return res, err
		}
		res.Why, res.Audit = append(res.Why, w), append(res.Audit, a)
	}
	r.logf("  why %s, audit %s (medians)", ms(median(res.Why)), ms(median(res.Audit)))
	return res, nil
}

// startups starts and stops the daemon n times and returns the wall time
// of each start (exec to the "tracing" line) and the CPU time the daemon
// had used by then.
func (r *Runner) startups(ctx context.Context, n int) (wall, cpu []float64, err error) {
	for range n {
		d, err := StartDaemon(ctx, DaemonOptions{Binary: r.cfg.Mntleak, LogFile: r.logPath("daemon-startup.log")})
		if err != nil {
			return wall, cpu, err
		}
		wall, cpu = append(wall, d.Startup.Seconds()), append(cpu, d.StartupCPU.Seconds())
		if err := d.Stop(); err != nil {
			return wall, cpu, err
		}
	}
	r.logf("  startup %s, daemon CPU %s (medians of %d)", ms(median(wall)), ms(median(cpu)), len(wall))
	return wall, cpu, nil
}

// latency causes each failure in turn under a daemon run with args and
// times it from just before the call to the finding's line on the
// daemon's stderr.
func (r *Runner) latency(ctx context.Context, paths, args []string, log string) (LatencySamples, error) {
	var res LatencySamples
	d, err := StartDaemon(ctx, DaemonOptions{Binary: r.cfg.Mntleak, LogFile: r.logPath(log), Args: args})
	if err != nil {
		return res, err
	}
	defer d.Stop()
	time.Sleep(time.Second) // past the startup snapshot's settling
	cpu0, err := cpuTime(d.PID())
	if err != nil {
		return res, err
	}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		res.Trials++
		seen := len(d.Findings())
		t0 := time.Now()
		if err := unix.Unmount(p, 0); !errors.Is(err, unix.EINVAL) {
			return res, fmt.Errorf("umount2 %s: %v, want EINVAL (mounted only in another namespace)", p, err)
		}
		deadline := t0.Add(3 * time.Second)
		for time.Now().Before(deadline) {
			if f := findingOn(d.Findings()[seen:], p); f != nil {
				// The log's timestamp has millisecond precision: it
				// is truncated, so the figure is low by under 1 ms.
				res.Latencies = append(res.Latencies, max(f.Logged.Sub(t0).Seconds(), 0))
				res.Delivered = append(res.Delivered, f.Arrived.Sub(t0).Seconds())
				break
			}
			time.Sleep(200 * time.Microsecond)
		}
		time.Sleep(20 * time.Millisecond) // one failure at a time
	}
	cpu1, err := cpuTime(d.PID())
	if err != nil {
		return res, err
	}
	if res.Trials > 0 {
		res.FailureCPU = (cpu1 - cpu0).Seconds() / float64(res.Trials)
	}
	r.logf("  latency %v: p50 %s p99 %s (read from stderr: p50 %s p99 %s), %d of %d explained; daemon CPU %s per failure", args, ms(percentile(res.Latencies, 50)),
		ms(percentile(res.Latencies, 99)), ms(percentile(res.Delivered, 50)), ms(percentile(res.Delivered, 99)), len(res.Latencies), res.Trials, ms(res.FailureCPU))
	return res, nil
}

func findingOn(fs []Finding, path string) *Finding {
	for i := range fs {
		if fs[i].Path == path && fs[i].Kind == "failure" {
			return &fs[i]
		}
	}
	return nil
}

// mountIn mounts a tmpfs on each path inside pid's mount namespace, from a
// thread that joins it and ends with the work (so it never returns to the
// host's namespace).
func mountIn(pid int, paths []string) error {
	return nsthread.Run(func() error {
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			return fmt.Errorf("unshare fs: %w", err)
		}
		fd, err := unix.Open("/proc/"+strconv.Itoa(pid)+"/ns/mnt", unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open mount namespace of pid %d: %w", pid, err)
		}
		defer unix.Close(fd)
		if err := unix.Setns(fd, unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("join mount namespace of pid %d: %w", pid, err)
		}
		for _, p := range paths {
			if err := unix.Mount("lat", p, "tmpfs", 0, "size=1m"); err != nil {
				return fmt.Errorf("mount tmpfs on %s in the namespace of pid %d: %w", p, pid, err)
			}
		}
		return nil
	})
}

// census counts the processes and the distinct mount namespaces on the
// machine.
func census() (procs, namespaces int) {
	ents, _ := os.ReadDir("/proc")
	seen := map[uint32]bool{}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		procs++
		if ns, err := mountNS(pid); err == nil {
			seen[ns] = true
		}
	}
	return procs, len(seen)
}

// timeCommand runs `mntleak ARGS...` and returns its wall time. Exit
// status 1 (something holds the target, a leak was found) is an answer.
func (r *Runner) timeCommand(ctx context.Context, args ...string) (float64, error) {
	cmd := exec.CommandContext(ctx, r.cfg.Mntleak, args...)
	cmd.Stdout, cmd.Stderr = r.log, r.log
	t0 := time.Now()
	err := cmd.Run()
	wall := time.Since(t0).Seconds()
	var ee *exec.ExitError
	if err != nil && !(errors.As(err, &ee) && ee.ExitCode() == 1) {
		return wall, fmt.Errorf("mntleak %v: %w", args, err)
	}
	return wall, nil
}
