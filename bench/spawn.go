package bench

import (
	"context"
	"fmt"
	"os/exec"
	"time"
)

// processChurn starts n processes one after another (fork and exec of
// true, each waited for) and returns the wall time. Each exit is an event
// mntleak reads (the process lifecycle is on the scheduler tracepoints);
// the thirty-odd syscalls of each start are ones its dispatcher lets go.
func processChurn(ctx context.Context, n int) (time.Duration, error) {
	t0 := time.Now()
	for i := 0; i < n; i++ {
		if err := exec.CommandContext(ctx, "true").Run(); err != nil {
			return 0, fmt.Errorf("process %d of %d: %w", i+1, n, err)
		}
	}
	return time.Since(t0), nil
}

// ProcessChurn is the process churn under every variant: the wall seconds
// of the processes' starts, and the seconds of CPU the mntleak daemon
// spent meanwhile (under Mntleak only).
func (r *Runner) ProcessChurn(ctx context.Context) (wall, daemonCPU samples, err error) {
	daemonCPU = samples{}
	wall, err = r.interleave(ctx, "process-churn", r.variants(), r.cfg.Rounds, func(ctx context.Context, v Variant) (float64, error) {
		var meter *cpuMeter
		if pid := r.daemonPID(); pid != 0 {
			m, err := startCPU(pid)
			if err != nil {
				return 0, err
			}
			meter = m
		}
		w, err := processChurn(ctx, r.cfg.SpawnProcesses)
		if err != nil || meter == nil {
			return w.Seconds(), err
		}
		_, used, err := meter.share()
		daemonCPU[v] = append(daemonCPU[v], used.Seconds())
		return w.Seconds(), err
	})
	return wall, daemonCPU, err
}

func (rep *Report) spawnRow() Row {
	row := Row{Workload: fmt.Sprintf("process churn: %d processes start and exit, one at a time", rep.Config.SpawnProcesses),
		Figure: "wall ratio vs no tracer; daemon CPU", Target: "wall ≤ empty-BPF ratio × 1.03; daemon ≤ 2% of one core", Status: notRun}
	s, c := rep.Spawn, rep.SpawnCPU
	if len(s[NoTracer]) == 0 || len(s[Mntleak]) == 0 || len(s[Floor]) == 0 || len(c[Mntleak]) == 0 {
		return row
	}
	wall, _ := compare(s, "%.0f ms", 1000)
	share := median(c[Mntleak]) / median(s[Mntleak])
	row.Measured = fmt.Sprintf("wall: %s. Daemon CPU: %.0f ms a round (%s of one core)", wall, median(c[Mntleak])*1000, pct(share))
	row.Status = judged(ratio(median(s[Mntleak]), median(s[NoTracer])) <= ratio(median(s[Floor]), median(s[NoTracer]))*1.03,
		share <= 0.02)
	return row
}
