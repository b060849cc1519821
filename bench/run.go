package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// Report is everything one run measured.
type Report struct {
	Machine     Machine
	CommandLine string
	Quick       bool
	Config      Config
	Started     time.Time
	Elapsed     time.Duration

	Null, Churn       samples // wall: ns/op, seconds
	NullCPU, ChurnCPU samples // the workload threads' CPU time
	Spawn, SpawnCPU   samples // process churn: wall seconds; the daemon's CPU seconds
	Storm             *StormResult
	StormBaseline     float64 // syscalls/s with no tracer (0: not measured)
	Docker            *DockerResult
	Crowd             *CrowdResult
	Memory            *MemoryResult
	Errors            []string // sections that could not run, and why
}

// Sections are the names of a run's sections, in their order (what
// Config.Skip may name).
func Sections() []string {
	return []string{"null", "churn", "spawn", "storm", "docker", "crowd", "memory"}
}

// Run runs every section not skipped, prints the table, and writes the
// Markdown report when asked. It returns what failed, each named exactly:
// a hard target missed (events lost in the storm, findings during
// container churn) or a section that could not run; none when all is well.
func Run(ctx context.Context, cfg Config) ([]string, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("needs root (BPF, mount namespaces, docker)")
	}
	if _, err := os.Stat(cfg.Mntleak); err != nil {
		return nil, fmt.Errorf("mntleak binary: %w (make build)", err)
	}
	r, err := NewRunner(cfg)
	if err != nil {
		return nil, err
	}
	defer r.Close()
	if !cfg.NoBpftrace {
		// bpftrace finds tracepoints through tracefs, which a fresh
		// machine may not have mounted (mntleak itself does not need it).
		unmount, err := ensureTracefs()
		if err != nil {
			return nil, err
		}
		if unmount != nil {
			r.logf("mounted tracefs at %s for bpftrace; unmounted at the end", tracefsDir)
			defer unmount()
		}
	}
	rep := &Report{CommandLine: cfg.CommandLine, Quick: cfg.Quick, Config: cfg, Started: time.Now()}
	rep.Machine = DescribeMachine(ctx)
	r.logf("mntleak-bench: %s (work dir %s)", cfg.CommandLine, r.dir)
	r.logf("machine: %s", rep.Machine.Line())

	section := func(name string, fn func() error) {
		if cfg.Skip[name] || ctx.Err() != nil {
			return
		}
		r.logf("== %s", name)
		t0 := time.Now()
		if err := fn(); err != nil {
			r.logf("!! %s: %v", name, err)
			rep.Errors = append(rep.Errors, name+": "+err.Error())
		}
		r.logf("== %s done in %s", name, time.Since(t0).Round(time.Second))
	}
	section("null", func() (err error) { rep.Null, rep.NullCPU, err = r.NullSyscall(ctx); return })
	section("churn", func() (err error) { rep.Churn, rep.ChurnCPU, err = r.FileChurn(ctx); return })
	section("spawn", func() (err error) { rep.Spawn, rep.SpawnCPU, err = r.ProcessChurn(ctx); return })
	section("storm", func() error { return r.storms(ctx, rep) })
	section("docker", func() (err error) { rep.Docker, err = r.ContainerChurn(ctx); return })
	section("crowd", func() (err error) { rep.Crowd, err = r.Crowd(ctx); return })
	section("memory", func() (err error) { rep.Memory, err = r.Memory(ctx); return })
	rep.Elapsed = time.Since(rep.Started)
	rep.Machine.LoadEnd = LoadAverage()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rows := rep.Rows()
	fmt.Fprintln(r.out)
	fmt.Fprint(r.out, rep.Text(rows))
	if cfg.MarkdownOut != "" {
		if err := writeResults(cfg.MarkdownOut, rep.Markdown(rows)); err != nil {
			return nil, fmt.Errorf("write %s: %w", cfg.MarkdownOut, err)
		}
		r.logf("results written to %s", cfg.MarkdownOut)
	}
	return append(hardTargetsMissed(rows), rep.Errors...), nil
}

// storms runs the storm section: the storm's no-tracer rate when asked,
// the storm with the default ring buffer (held to 0 lost), then once with
// each ring buffer size asked, and once among each number of mounts asked.
func (r *Runner) storms(ctx context.Context, rep *Report) error {
	cfg := r.cfg
	if cfg.StormBaseline > 0 {
		rate, err := r.StormBaselineRate(ctx, cfg.StormBaseline)
		if err != nil {
			return err
		}
		rep.StormBaseline = rate
	}
	res, err := r.MountStorm(ctx, cfg.StormTime)
	rep.Storm = &res
	if err != nil {
		return err
	}
	r.logStorm("default ring buffer", res)
	for _, size := range cfg.StormRingBufSizes {
		res, err := r.MountStorm(ctx, cfg.StormTime, "--ringbuf-size", strconv.Itoa(size))
		if err != nil {
			return fmt.Errorf("storm with --ringbuf-size %d: %w", size, err)
		}
		// A size that loses events is a finding of the comparison,
		// not a failure of the run: only the default's storm is held
		// to 0 lost.
		r.logStorm(fmt.Sprintf("--ringbuf-size %d", size), res)
	}
	for _, n := range cfg.StormPremounts {
		res, err := r.CrowdedMountStorm(ctx, cfg.StormTime, n)
		if err != nil {
			return fmt.Errorf("storm among %d mounts: %w", n, err)
		}
		r.logStorm(fmt.Sprintf("%d mounts in its namespace", n), res)
	}
	return nil
}
