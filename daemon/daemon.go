package daemon

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/internal/logkey"
	"github.com/mntleak/mntleak/metrics"
	"github.com/mntleak/mntleak/procfs"
	"github.com/mntleak/mntleak/state"
	"github.com/mntleak/mntleak/stream"
	"github.com/mntleak/mntleak/tracer"
)

// gaugeInterval is how often, in event time, the gauges walk the
// correlator's state.
const gaugeInterval = time.Second

// Run traces until ctx is done: it opens the outputs, serves metrics,
// loads and attaches the tracer, reads the persistent lineage, takes the
// startup snapshot, then hands every event to the pipeline. reopen
// delivers the signals (SIGHUP) that reopen the output files. log is
// closed by the caller after Run returns.
func Run(ctx context.Context, cfg Config, stdout io.Writer, log *Log, reopen <-chan os.Signal) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// One daemon per state dir, decided before anything is loaded: a second
	// one exits naming the first. A dir that cannot be used at all only
	// costs the persistent lineage (openLineage says so).
	var lockErr error // said after the tracer's own checks (privileges first)
	if cfg.StateDir != "" {
		lock, err := state.Lock(cfg.StateDir)
		var held *state.HeldError
		if errors.As(err, &held) {
			return held
		}
		lockErr = err
		defer lock.Unlock() //nolint:errcheck // closing a lock file; the kernel drops it at exit anyway
	}

	// Every slow output is behind a bounded queue: the reader never waits.
	sk, err := openSinks(ctx, cfg, stdout, log)
	if err != nil {
		return err
	}
	defer sk.close(log.Logger)
	go sk.warnDrops(ctx, log.Logger, DropWarnInterval)
	go sk.reopenOn(ctx, reopen, log.Logger)

	p := &pipeline{cfg: cfg, sinks: sk, self: uint32(os.Getpid()), fail: func(err error) {
		if err != nil {
			cancel(fmt.Errorf("write events: %w", err))
		}
	}}
	// The metrics are served before the tracer exists (a scrape during
	// start-up sees zero losses); the tracer is handed over once made.
	var tr atomic.Pointer[tracer.Tracer]
	if err := p.serveMetrics(ctx, cancel, &tr, log); err != nil {
		return err
	}
	if err := servePprof(ctx, cancel, cfg.PprofAddr, log); err != nil {
		return err
	}
	// Raw events go to the journal only when asked (volume), not to stderr.
	if cfg.JournalEvents && log.journal != nil {
		p.eventLog = zap.New(log.journal).Named("event")
	}

	t, err := tracer.New(tracer.Config{Sink: p.handle, Buffer: cfg.Buffer, Hooks: cfg.Hooks, RingBufferBytes: cfg.RingBufferBytes}, log.Named("tracer"))
	if err != nil {
		return err
	}
	defer t.Close()
	tr.Store(t)
	p.clock, p.mono = t.Now, t.MonoNow
	if lockErr != nil {
		log.Warn("state dir not locked: a second daemon could share it", zap.Error(lockErr))
	}
	// The correlator and the path of its findings (runtimes, API server)
	// after the tracer's privilege checks too; the reader starts later, in
	// Run, so every field of the pipeline is set before the first event.
	if cfg.Correlate {
		closeCorrelation, err := p.openCorrelation(ctx, t, log)
		if err != nil {
			return err
		}
		defer closeCorrelation()
	}
	log.Info("tracing", zap.Stringer(logkey.Format, cfg.Format), zap.String(logkey.Record, cfg.Record),
		zap.Bool(logkey.Filter, !cfg.Filter.Empty()))
	log.Wake() // out at once: whoever started the daemon waits for this line
	if sk.people != nil {
		p.fail(sk.people.WriteNote(StartLine(cfg)))
	}

	return p.stopped(ctx, t, t.Run(ctx), log)
}

// stopped ends a run whose reader returned runErr: the leaks still
// waiting for their teardown to settle are reported and the findings'
// path drained, the tracer's counts logged. The error is the reader's,
// else what cancelled ctx (not a plain cancel: a signal).
func (p *pipeline) stopped(ctx context.Context, t *tracer.Tracer, runErr error, log *Log) error {
	if p.corr != nil {
		p.corr.Flush() // leaks still waiting for their teardown to settle
		p.findings.close()
	}
	logStopped(t, log.Logger)
	if runErr != nil {
		return runErr
	}
	if cause := context.Cause(ctx); cause != nil && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// serveMetrics serves the metrics on cfg.MetricsAddr when asked (the
// losses read from the tracer tr holds once it is made); a serving error
// cancels ctx.
func (p *pipeline) serveMetrics(ctx context.Context, cancel context.CancelCauseFunc, tr *atomic.Pointer[tracer.Tracer], log *Log) error {
	cfg := p.cfg
	if cfg.MetricsAddr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", cfg.MetricsAddr)
	if err != nil {
		return fmt.Errorf("listen for metrics on %s: %w", cfg.MetricsAddr, err)
	}
	p.mets = metrics.New(func() map[string]uint64 { return lostByKind(tr.Load()) })
	p.mets.SinkDrops(p.sinks.dropped)
	if dir := cfg.StateDir; dir != "" {
		mlog := log.Named("metrics")
		p.mets.Actions(func() map[[2]string]uint64 {
			n, err := state.CountActions(dir)
			if err != nil {
				mlog.Warn("count release actions", zap.Error(err))
			}
			return n
		})
	}
	go func() {
		if err := p.mets.Serve(ctx, ln, log.Named("metrics")); err != nil {
			cancel(err)
		}
	}()
	return nil
}

// servePprof serves the profiles on addr when asked ("": not); a serving
// error cancels ctx.
func servePprof(ctx context.Context, cancel context.CancelCauseFunc, addr string, log *Log) error {
	if addr == "" {
		return nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen for profiles on %s: %w", addr, err)
	}
	go func() {
		if err := metrics.ServePprof(ctx, ln, log.Named("pprof")); err != nil {
			cancel(err)
		}
	}()
	return nil
}

// openCorrelation sets up what correlates the events of tracer t: the
// path of the findings, the correlator, the sources of what it asks, the
// persistent lineage, the startup snapshot and the kernel's mount notes.
// closeAll closes them, last opened first; on an error what was opened is
// closed already.
func (p *pipeline) openCorrelation(ctx context.Context, t *tracer.Tracer, log *Log) (closeAll func(), err error) {
	cfg := p.cfg
	var closers []func()
	closeAll = func() {
		for i := len(closers) - 1; i >= 0; i-- {
			closers[i]()
		}
	}
	defer func() {
		if err != nil {
			closeAll()
		}
	}()
	fs, err := openFindings(ctx, cfg, p, log.Logger)
	if err != nil {
		return nil, err
	}
	closers = append(closers, fs.close)
	p.findings = fs
	tasks := tasksBut(t, p.self)
	p.corr = newCorrelator(p, procfs.Host{}, tasks, fs.submit)
	p.log = log.Named("pipeline")
	p.src = NewSources(p.log)
	p.src.Tasks = tasks
	p.src.cgroups = newCgroupCache(t.CgroupChanges, p.src.Host.Cgroup)
	// After the tracer's checks (privileges first), before the snapshot:
	// the persistent lineage, what an earlier run saw, then what this one
	// sees. Events wait in the buffer until Run reads them, so the reader
	// sees the store set.
	if cfg.StateDir != "" {
		p.lineage = openLineage(ctx, cfg.StateDir, cfg.StateBytes, p.corr, log.Logger)
		closers = append(closers, p.lineage.close)
	}
	// After attaching: whatever happens during the snapshot is in the
	// buffer and is applied on top of it.
	if err := p.corr.Start(); err != nil {
		return nil, fmt.Errorf("startup snapshot of /proc: %w", err)
	}
	if !cfg.NoMountNotes {
		p.mounts = openMountWatch(p.corr, p.src.Tasks, p.log)
		closers = append(closers, p.mounts.close)
	}
	quietExits(t, p.mounts != nil, p.log)
	return closeAll, nil
}

// newCorrelator makes the correlator reading proc, and tasks (nil in a
// replay): its answers are recorded with the events when there is a
// record, and every finding is handed to submit (enriched, logged, counted
// and posted off the event path: findings.go).
func newCorrelator(p *pipeline, proc procfs.Proc, tasks func() ([]event.Task, bool, error), submit func(*finding.Finding)) *correlate.Correlator {
	if rec := p.sinks.rec; rec != nil {
		proc = procfs.Recorder{Proc: proc, Write: func(r *procfs.Record) { p.fail(rec.WriteJSON(stream.ProcLine{Proc: r})) }}
	}
	return correlate.New(proc, correlate.Options{Tasks: tasks}, submit)
}

// tasksBut is the tracer's tasks (correlate.Options.Tasks) but the
// daemon's own threads: they enter namespaces to read them, and their
// events are not correlated either (pipeline.handle).
func tasksBut(t *tracer.Tracer, self uint32) func() ([]event.Task, bool, error) {
	return func() ([]event.Task, bool, error) {
		tasks, complete, err := t.Tasks()
		return slices.DeleteFunc(tasks, func(k event.Task) bool { return k.PID == int(self) }), complete, err
	}
}

// lostByKind is the kernel's loss counters for the metric; none before the
// tracer exists.
func lostByKind(t *tracer.Tracer) map[string]uint64 {
	out := map[string]uint64{}
	if t == nil {
		return out
	}
	if st, err := t.Stats(); err == nil {
		for k, n := range st.Lost {
			out[k.String()] = n
		}
	}
	return out
}

// logStopped logs the tracer's counters at exit.
func logStopped(t *tracer.Tracer, log *zap.Logger) {
	st, err := t.Stats()
	if err != nil {
		log.Warn("stopped; counters unreadable", zap.Error(err))
		return
	}
	fields := []zap.Field{zap.Uint64(logkey.Received, st.Received),
		zap.Uint64(logkey.LostTotal, st.LostTotal), zap.Uint64(logkey.DecodeErrors, st.DecodeErrors)}
	if st.LostReadErrors > 0 {
		fields = append(fields, zap.Uint64(logkey.LostReadErrors, st.LostReadErrors))
	}
	if st.Buffer == tracer.BufferPerf {
		// Events the reorder window could not put back in order.
		fields = append(fields, zap.Uint64(logkey.PerfLost, st.PerfLostSamples),
			zap.Uint64(logkey.ReorderLate, st.PerfReorderLate), zap.Uint64(logkey.ReorderForced, st.PerfReorderForced))
	}
	log.Info("stopped", fields...)
}
