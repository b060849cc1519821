package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// SoakConfig sizes a soak: one daemon, for Duration, under cycles of a
// mount storm, container churn and injected failures.
type SoakConfig struct {
	Duration      time.Duration
	StormTime     time.Duration // storm length per cycle
	Containers    int           // docker run/rm per cycle (0: no Docker)
	Failures      int           // injected failures per cycle
	SampleEvery   time.Duration // RSS and counters
	StormThreads  int
	ExplainWithin time.Duration // an injected failure's finding must come this soon
}

// DefaultSoak is `make soak`'s configuration but for the duration.
func DefaultSoak(d time.Duration) SoakConfig {
	return SoakConfig{Duration: d, StormTime: 8 * time.Second, Containers: 6, Failures: 10,
		SampleEvery: 5 * time.Second, StormThreads: 2, ExplainWithin: 5 * time.Second}
}

// SoakSample is the daemon at one moment of the soak.
type SoakSample struct {
	At     time.Duration // since the start
	RSS    int64         // bytes
	Events float64       // mntleak_events_total, every kind
	Lost   float64       // mntleak_events_lost_total
}

// SoakResult is what a soak measured and checked.
type SoakResult struct {
	Config          SoakConfig
	Elapsed         time.Duration
	Cycles          int
	Samples         []SoakSample
	StormSyscalls   int64 // mount + umount calls the storms made
	Containers      int
	Injected        int
	Explained       int
	Unexplained     []string // injected failures without a finding in time
	Unexpected      []string // findings about the soak's work that it did not inject
	Elsewhere       int      // findings about anything else on the machine
	Lost            float64
	CPU             float64 // daemon CPU over the soak (1 = one core)
	RSSStart        int64   // median RSS of the second quarter (after warm-up)
	RSSEnd          int64   // median RSS of the last quarter
	LeftoverMounts  []string
	LeftoverEntries int // mount entries of the host namespace: after minus before
}

// Pass reports whether every soak check held, and if not, why.
func (s *SoakResult) Pass() (bool, []string) {
	var why []string
	if s.Lost != 0 {
		why = append(why, fmt.Sprintf("%.0f events lost", s.Lost))
	}
	if len(s.Unexplained) > 0 {
		why = append(why, fmt.Sprintf("%d of %d injected failures unexplained", len(s.Unexplained), s.Injected))
	}
	if s.Injected == 0 {
		why = append(why, "no failure was injected")
	}
	if len(s.Unexpected) > 0 {
		why = append(why, fmt.Sprintf("%d findings about nothing injected", len(s.Unexpected)))
	}
	if !s.RSSFlat() {
		why = append(why, fmt.Sprintf("RSS grew from %s to %s", mib(s.RSSStart), mib(s.RSSEnd)))
	}
	if len(s.LeftoverMounts) > 0 {
		why = append(why, fmt.Sprintf("mounts left behind: %s", strings.Join(s.LeftoverMounts, ", ")))
	}
	return len(why) == 0, why
}

// RSSFlat: the end of the soak is within 15% + 4 MiB of its start (after
// the warm-up quarter). A leak proportional to the work done grows
// without bound over cycles; this catches one within a few minutes.
func (s *SoakResult) RSSFlat() bool {
	return s.RSSStart > 0 && float64(s.RSSEnd) <= float64(s.RSSStart)*1.15+4<<20
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

// Soak runs one daemon for cfg.Duration under repeated cycles: a mount
// storm in a private namespace, container churn on the benchmark's own
// Docker Engine, and failures whose cause is known (umount2 EINVAL of a
// tmpfs mounted only in a holder namespace). It samples the daemon's
// memory and counters, then checks them.
func (r *Runner) Soak(ctx context.Context, cfg SoakConfig) (*SoakResult, error) {
	res := &SoakResult{Config: cfg}
	entriesBefore, err := hostMountEntries()
	if err != nil {
		return res, err
	}
	// Stopped before the leftover check, and by the defers on errors.
	var e *engine
	stopEngine := func() {}
	if cfg.Containers > 0 {
		if e, err = r.startEngine(ctx); err != nil {
			return res, err
		}
		stopEngine = sync.OnceFunc(e.stop)
		defer stopEngine()
	}
	holders, err := startNode("private")
	if err != nil {
		return res, err
	}
	closeHolders := sync.OnceFunc(holders.close)
	defer closeHolders()
	d, err := StartDaemon(ctx, DaemonOptions{Binary: r.cfg.Mntleak, LogFile: r.logPath("daemon-soak.log")})
	if err != nil {
		return res, err
	}
	defer d.Stop()
	meter, err := startCPU(d.PID())
	if err != nil {
		return res, err
	}
	start := time.Now()
	injected := map[string]bool{}
	samples := &soakSampler{d: d, start: start, every: cfg.SampleEvery, res: res}
	if err := samples.take(); err != nil {
		return res, err
	}
	for time.Since(start) < cfg.Duration && ctx.Err() == nil {
		res.Cycles++
		if err := r.soakCycle(ctx, cfg, e, d, holders, injected, res, samples.due); err != nil {
			return res, err
		}
		r.logf("  soak cycle %d at %s: RSS %s, %d of %d failures explained, lost %.0f", res.Cycles,
			time.Since(start).Round(time.Second), mib(res.Samples[len(res.Samples)-1].RSS), res.Explained, res.Injected,
			res.Samples[len(res.Samples)-1].Lost)
	}
	time.Sleep(time.Second) // the last events reach the daemon
	if err := samples.take(); err != nil {
		return res, err
	}
	res.Elapsed = time.Since(start)
	if res.CPU, _, err = meter.share(); err != nil {
		return res, err
	}
	res.Lost = res.Samples[len(res.Samples)-1].Lost - res.Samples[0].Lost
	res.RSSStart, res.RSSEnd = quarterMedians(res.Samples)
	r.judgeSoakFindings(d, injected, res)
	if err := d.Stop(); err != nil {
		return res, fmt.Errorf("stop the daemon: %w", err)
	}
	stopEngine()
	closeHolders()
	if err := r.soakLeftovers(entriesBefore, res); err != nil {
		return res, err
	}
	return res, ctx.Err()
}

// soakSampler samples the soak's daemon: its RSS and counters, into res.
type soakSampler struct {
	d           *Daemon
	start, next time.Time // the soak's start; when the next sample is due
	every       time.Duration
	res         *SoakResult
}

// take samples the daemon now.
func (s *soakSampler) take() error {
	m, err := s.d.Scrape()
	if err != nil {
		return err
	}
	mem, err := memoryOf(s.d.PID())
	if err != nil {
		return err
	}
	s.res.Samples = append(s.res.Samples, SoakSample{At: time.Since(s.start), RSS: mem.RSS, Events: sumPrefix(m, "mntleak_events_total"), Lost: lost(m)})
	s.next = time.Now().Add(s.every)
	return nil
}

// due samples the daemon when a sample is due.
func (s *soakSampler) due() error {
	if time.Now().After(s.next) {
		return s.take()
	}
	return nil
}

// soakCycle runs one cycle's steps (cycle res.Cycles): a storm burst,
// container churn on engine e (nil: none), the injected failures;
// afterStep runs after each (the memory and counter samples when due).
func (r *Runner) soakCycle(ctx context.Context, cfg SoakConfig, e *engine, d *Daemon, holders *node, injected map[string]bool, res *SoakResult, afterStep func() error) error {
	cycle := res.Cycles
	steps := []func() error{
		func() error { return r.soakStorm(ctx, cfg, res) },
		func() error {
			if e == nil {
				return nil
			}
			_, err := e.churn(ctx, 1000+cycle, cfg.Containers)
			res.Containers += cfg.Containers
			return err
		},
		func() error { return r.soakFailures(ctx, cfg, d, holders, cycle, injected, res) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return fmt.Errorf("soak cycle %d: %w", cycle, err)
		}
		if err := afterStep(); err != nil {
			return err
		}
	}
	return nil
}

// judgeSoakFindings sorts the daemon's findings: the machine is shared,
// so only findings about the soak's own work (its directory) are judged
// (one not about an injected failure is unexpected); others are counted.
func (r *Runner) judgeSoakFindings(d *Daemon, injected map[string]bool, res *SoakResult) {
	for _, f := range d.Findings() {
		switch {
		case !strings.Contains(f.Line, r.dir):
			res.Elsewhere++
		case !injected[f.Path]:
			res.Unexpected = append(res.Unexpected, f.Line)
		}
	}
}

// soakLeftovers counts the host's mount entries the soak left (before:
// the entries at its start), and names those in its directory.
func (r *Runner) soakLeftovers(before map[string]bool, res *SoakResult) error {
	after, err := hostMountEntries()
	if err != nil {
		return err
	}
	for mp := range after {
		if !before[mp] && strings.HasPrefix(mp, r.dir) {
			res.LeftoverMounts = append(res.LeftoverMounts, mp)
		}
	}
	res.LeftoverEntries = len(after) - len(before)
	return nil
}

// soakStorm runs one storm burst and checks the worker made its calls.
func (r *Runner) soakStorm(ctx context.Context, cfg SoakConfig, res *SoakResult) error {
	w, err := r.startStormWorker(cfg.StormThreads, 0)
	if err != nil {
		return err
	}
	defer w.kill()
	if _, err := w.in.Write([]byte("go\n")); err != nil {
		return fmt.Errorf("start storm worker %d: %w", w.pid, err)
	}
	select {
	case <-time.After(cfg.StormTime):
	case <-ctx.Done():
	}
	m, u, failed, err := w.finish()
	if err != nil {
		return err
	}
	if failed > 0 {
		return fmt.Errorf("storm: %d mount or umount calls failed", failed)
	}
	res.StormSyscalls += m + u
	return nil
}

// soakFailures starts a holder namespace, mounts a tmpfs on fresh paths
// there only, and fails umount2 of each in the host namespace (EINVAL): a
// failure the daemon must explain by the holder. The holder then exits.
func (r *Runner) soakFailures(ctx context.Context, cfg SoakConfig, d *Daemon, holders *node, cycle int,
	injected map[string]bool, res *SoakResult) error {
	paths := make([]string, cfg.Failures)
	for i := range paths {
		paths[i] = filepath.Join(r.dir, "soak", strconv.Itoa(cycle), strconv.Itoa(i))
	}
	if err := mkdirs(paths...); err != nil {
		return err
	}
	defer os.RemoveAll(filepath.Join(r.dir, "soak", strconv.Itoa(cycle)))
	g := &group{}
	defer g.kill()
	var holder int
	if err := holders.do(func() error {
		c, err := g.sleeper(crowdLifetime, true)
		if c != nil {
			holder = c.Process.Pid
		}
		return err
	}); err != nil {
		return err
	}
	if err := mountIn(holder, paths); err != nil {
		return err
	}
	time.Sleep(300 * time.Millisecond) // past the settle delay: the daemon has read the holder's table
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return err
		}
		injected[p] = true
		res.Injected++
		seen := len(d.Findings())
		if err := unix.Unmount(p, 0); !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("umount2 %s: %v, want EINVAL (mounted only in the holder's namespace)", p, err)
		}
		deadline := time.Now().Add(cfg.ExplainWithin)
		for {
			if f := findingOn(d.Findings()[seen:], p); f != nil {
				if strings.Contains(f.Line, strconv.Itoa(holder)) {
					res.Explained++
				} else {
					res.Unexplained = append(res.Unexplained, p+": the finding does not name holder "+strconv.Itoa(holder)+": "+f.Line)
				}
				break
			}
			if time.Now().After(deadline) {
				res.Unexplained = append(res.Unexplained, p+": no finding within "+cfg.ExplainWithin.String())
				break
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
	return nil
}

// hostMountEntries returns the mount points of this process's namespace.
func hostMountEntries() (map[string]bool, error) {
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 {
			out[f[4]] = true
		}
	}
	return out, nil
}

// quarterMedians: the median RSS of the second quarter of the samples
// (after the warm-up) and of the last quarter.
func quarterMedians(s []SoakSample) (start, end int64) {
	if len(s) < 4 {
		if len(s) == 0 {
			return 0, 0
		}
		return s[0].RSS, s[len(s)-1].RSS
	}
	q := len(s) / 4
	med := func(part []SoakSample) int64 {
		xs := make([]float64, len(part))
		for i, p := range part {
			xs[i] = float64(p.RSS)
		}
		return int64(median(xs))
	}
	return med(s[q : 2*q]), med(s[len(s)-q:])
}

// sumPrefix adds the metrics whose name (with labels) starts with name.
func sumPrefix(m map[string]float64, name string) float64 {
	var sum float64
	for k, v := range m {
		if k == name || strings.HasPrefix(k, name+"{") {
			sum += v
		}
	}
	return sum
}
