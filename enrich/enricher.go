package enrich

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/finding"
)

// Enricher fills findings on its own goroutine and hands them, in the
// order they were submitted, to out.
type Enricher struct {
	cfg    Config
	lookup attribution.Lookup
	record func(*attribution.Record) // nil without a record
	out    func(*finding.Finding)

	in     chan *finding.Finding
	ctx    context.Context // canceled when Close's budget runs out
	cancel context.CancelFunc
	done   chan struct{}

	mu     sync.Mutex // Submit (event path) against Close
	n      int        // findings submitted
	closed bool
}

// New returns an Enricher asking lookup, writing what it was set up with
// and (through lookup, when it is an attribution.Recorder) every answer to
// record (nil for none), and handing each finding to out. Call Start.
func New(cfg Config, lookup attribution.Lookup, record func(*attribution.Record), out func(*finding.Finding)) *Enricher {
	cfg.defaults()
	ctx, cancel := context.WithCancel(context.Background())
	e := &Enricher{cfg: cfg, lookup: lookup, record: record, out: out,
		in: make(chan *finding.Finding, cfg.Queue), ctx: ctx, cancel: cancel, done: make(chan struct{})}
	if record != nil {
		record(&attribution.Record{Op: attribution.OpSettings, Node: cfg.Node, KubeletRoot: cfg.KubeletRoot})
	}
	return e
}

// Start runs the goroutine that fills the queued findings.
func (e *Enricher) Start() {
	go func() {
		defer close(e.done)
		for f := range e.in {
			ctx, cancel := context.WithTimeout(e.ctx, e.cfg.Timeout)
			Fill(ctx, f, e.cfg, e.lookup)
			cancel()
			e.out(f)
		}
	}()
}

// Submit queues f; it never waits. With the queue full, or once Close was
// called, f is handed on at once with what its paths tell, and its
// enrichment field says why.
func (e *Enricher) Submit(f *finding.Finding) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.n++
	if !e.closed {
		select {
		case e.in <- f:
			return
		default:
		}
	}
	why := "queue full"
	if e.closed {
		why = "the daemon is stopping"
	}
	if e.record != nil {
		e.record(&attribution.Record{Op: attribution.OpSkip, Key: strconv.Itoa(e.n), Err: why})
	}
	skip(f, e.cfg, why)
	e.out(f)
}

// skip fills what needs no lookup and says why the rest was not asked.
func skip(f *finding.Finding, cfg Config, why string) {
	FillPaths(f, cfg)
	f.Enrichment = prefixSkipped + why
}

// Close stops taking findings and waits for the queued ones to be
// enriched and handed on, for at most budget; then the questions still
// asked are canceled, and the rest are handed on with what is known
// (their enrichment field says so). Every finding has been handed to out
// when Close returns.
func (e *Enricher) Close(budget time.Duration) {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	e.closed = true
	close(e.in)
	e.mu.Unlock()
	t := time.NewTimer(budget)
	defer t.Stop()
	select {
	case <-e.done:
	case <-t.C:
		e.cancel()
		<-e.done
	}
	e.cancel()
}
