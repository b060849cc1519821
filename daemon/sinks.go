package daemon

import (
	"context"
	"errors"
	"io"
	"os"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/internal/logkey"
	"github.com/mntleak/mntleak/sink/journald"
	"github.com/mntleak/mntleak/sink/output"
)

// Time limits at exit: a daemon told to stop detaches and exits within 2s
// even when an output is stuck (a pipe nobody reads, a stopped journald).
// Detaching the programs takes most of that (a synchronize_rcu per
// tracepoint), so the outputs get what is left of flushBudget from the
// signal, each at most its own timeout, all at once.
const (
	correlateBudget     = 700 * time.Millisecond
	flushBudget         = 1500 * time.Millisecond
	outputCloseTimeout  = 500 * time.Millisecond // each of --output and --record
	journalCloseTimeout = 300 * time.Millisecond
	minCloseTimeout     = 100 * time.Millisecond // even past the budget: a healthy output flushes in that
)

// DropWarnInterval is the least time between two warnings about dropped
// output: one line with the counts, not one per dropped line.
const DropWarnInterval = 5 * time.Second

// Queue capacities. The record gets more room: a /proc snapshot is one
// long line and a replay needs it.
const (
	streamQueueBytes = 4 << 20
	recordQueueBytes = 16 << 20
)

// sinks are the slow outputs of trace, each behind a bounded queue drained
// by a goroutine of its own, so the ring-buffer reader never waits for
// them.
type sinks struct {
	outName string         // "stdout", or "output" for an --output file
	discard bool           // stdout is /dev/null: events are not encoded
	out     *output.Writer // --output, or stdout
	people  *output.Writer // stdout for a person (Format Human): findings, the start line; may be out
	rec     *output.Writer // --record; nil without
	journal *journald.Core // nil without
	stderr  *output.Lines

	stopAt atomic.Int64 // unix nanoseconds when the daemon was told to stop
}

// watch notes when ctx is done: the exit deadline counts from then.
func (s *sinks) watch(ctx context.Context) {
	context.AfterFunc(ctx, func() { s.stopAt.Store(time.Now().UnixNano()) })
}

// drainOnly reports whether the daemon was told to stop more than
// correlateBudget ago. The tracer then still drains what the kernel had
// queued, but a full buffer is tens of thousands of events: they are
// written out, no longer correlated (the costly part), so the exit stays
// within 2s.
func (s *sinks) drainOnly() bool {
	at := s.stopAt.Load()
	return at != 0 && time.Since(time.Unix(0, at)) > correlateBudget
}

// remaining is how long an output may take to flush at exit.
func (s *sinks) remaining(limit time.Duration) time.Duration {
	at := s.stopAt.Load()
	if at == 0 {
		return limit
	}
	d := time.Until(time.Unix(0, at).Add(flushBudget))
	return min(max(d, minCloseTimeout), limit)
}

func openSinks(ctx context.Context, cfg Config, stdout io.Writer, logs *Log) (*sinks, error) {
	s := &sinks{journal: logs.journal, stderr: logs.stderr}
	s.watch(ctx)
	streamOpts := output.Options{QueueBytes: streamQueueBytes, CloseTimeout: outputCloseTimeout}
	s.outName = "stdout"
	human := cfg.Format == output.Human
	if cfg.Output == "" {
		s.out = output.NewWriterOptions(stdout, cfg.Format, nil, streamOpts)
		// Under systemd (StandardOutput=null) or a benchmark, events to
		// /dev/null would be encoded for nothing: a storm's worth of JSON.
		// A person's terminal shows findings, events only when asked.
		s.discard = isDevNull(stdout) || (human && !cfg.Events)
		if human {
			s.people = s.out
		}
	} else {
		// Appended to: a restarted daemon continues the file, as text for
		// a person's trace (a file is read with grep, not a terminal).
		format := cfg.Format
		if human {
			format = output.Text
			s.people = output.NewWriterOptions(stdout, output.Human, nil, streamOpts)
		}
		w, err := output.OpenFile(cfg.Output, format, false, streamOpts)
		if err != nil {
			return nil, err
		}
		s.out, s.outName = w, "output"
	}
	if cfg.Record != "" {
		// Truncated: a record is one replayable stream from this start.
		w, err := output.OpenFile(cfg.Record, output.JSON, true,
			output.Options{QueueBytes: recordQueueBytes, CloseTimeout: outputCloseTimeout})
		if err != nil {
			s.out.Close()
			if s.people != nil && s.people != s.out {
				s.people.Close()
			}
			return nil, err
		}
		s.rec = w
	}
	return s, nil
}

// dropped returns the drop counters by sink, for the metric and the
// warning.
func (s *sinks) dropped() map[string]uint64 {
	m := map[string]uint64{s.outName: s.out.Dropped()}
	if s.rec != nil {
		m["record"] = s.rec.Dropped()
	}
	if s.stderr != nil {
		m["stderr"] = s.stderr.Dropped()
	}
	if s.journal != nil {
		// Entries that found the queue full and entries journald did not
		// take: both are missing from the journal (and both are on stderr).
		m["journal"] = s.journal.Dropped() + s.journal.Lost()
	}
	return m
}

// warnDrops logs, at most once per interval, how much each sink dropped
// since the previous warning, until ctx is done.
func (s *sinks) warnDrops(ctx context.Context, log *zap.Logger, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	last := map[string]uint64{}
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := s.dropped()
		names := make([]string, 0, len(now))
		for name := range now {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if n := now[name]; n > last[name] {
				log.Warn("output overloaded: dropped lines the output did not take in time (the reader does not wait)",
					zap.String(logkey.Sink, name), zap.Uint64(logkey.Dropped, n-last[name]), zap.Uint64(logkey.DroppedTotal, n))
			}
		}
		last = now
	}
}

// reopenOn reopens the output files on each signal (SIGHUP from logrotate)
// until ctx is done.
func (s *sinks) reopenOn(ctx context.Context, sig <-chan os.Signal, log *zap.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-sig:
		}
		var err error
		if s.outName == "output" { // stdout has no path to reopen
			err = s.out.Reopen()
		}
		err = errors.Join(err, reopenRec(s.rec))
		if err != nil {
			log.Error("reopen output files", zap.Error(err))
			continue
		}
		log.Info("reopened output files")
	}
}

func reopenRec(w *output.Writer) error {
	if w == nil {
		return nil
	}
	return w.Reopen()
}

// close flushes the outputs, all at once, within what is left of the exit
// budget; what a stuck output did not take is abandoned and said (on
// stderr: the journal may be the stuck one).
func (s *sinks) close(log *zap.Logger) {
	var wg sync.WaitGroup
	closeOne := func(name string, close func(time.Duration) error, limit time.Duration) {
		defer wg.Done()
		if err := close(s.remaining(limit)); err != nil {
			log.Warn("output not flushed at exit", zap.String(logkey.Sink, name), zap.Error(err))
		}
	}
	wg.Add(1)
	go closeOne(s.outName, s.out.CloseWithin, outputCloseTimeout)
	if s.rec != nil {
		wg.Add(1)
		go closeOne("record", s.rec.CloseWithin, outputCloseTimeout)
	}
	if s.people != nil && s.people != s.out {
		wg.Add(1)
		go closeOne("stdout", s.people.CloseWithin, outputCloseTimeout)
	}
	if s.journal != nil {
		wg.Add(1)
		go closeOne("journal", s.journal.Close, journalCloseTimeout)
	}
	wg.Wait()
}

// isDevNull reports whether w is the null device (character device 1:3).
func isDevNull(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	var st unix.Stat_t
	if err := unix.Fstat(int(f.Fd()), &st); err != nil {
		return false
	}
	return st.Mode&unix.S_IFMT == unix.S_IFCHR && unix.Major(st.Rdev) == 1 && unix.Minor(st.Rdev) == 3
}
