package daemon

import (
	"go.uber.org/zap"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/logkey"
	"github.com/mntleak/mntleak/metrics"
)

// pipeline is the event path: the tracer's reader calls handle for every
// event, in kernel order, on one goroutine. Nothing on it waits for an
// output; every field is set before the reader starts.
type pipeline struct {
	cfg      Config
	sinks    *sinks
	fail     func(error)           // a write to the stream or record failed: stop
	corr     *correlate.Correlator // nil without --correlate
	findings *findings             // a finding's path after corr; nil without
	mets     *metrics.Metrics      // nil without --metrics-addr
	lineage  *lineageStore         // nil without a usable state dir
	eventLog *zap.Logger           // raw events to the journal; nil unless asked
	src      Sources               // what Prepare asks; no teardown device without --correlate
	log      *zap.Logger           // nil without --correlate
	gaugesAt int64                 // event time (unix ns) the gauges were last set
	// self is the daemon's pid: its own events (a thread of it enters a
	// namespace no process runs in to read its table) are not the node's,
	// and would make it a process of that namespace. 0 in tests.
	self uint32
}

// handle takes one event through every stage, top to bottom. The record
// holds every event the correlator consumes, so a replay reaches the same
// findings; the filter only selects what is printed.
func (p *pipeline) handle(ev *event.Event) {
	if p.self != 0 && ev.PID == p.self {
		return
	}
	correlating := p.corr != nil && !p.sinks.drainOnly()
	// 1. Prepare: what the engine needs of the event and the kernel did
	//    not give (a failure's executable, the cgroup of the process a
	//    finding may name, a new namespace's birth id, a teardown call's
	//    device), read now: by a replay it may be gone.
	if correlating {
		if err := correlate.Prepare(ev, p.src); err != nil {
			p.log.Warn("event not fully prepared", zap.Error(err))
		}
		p.findings.warm(ev.Cgroup)
	}
	// 2. Record and persist: everything, before any filter.
	if p.sinks.rec != nil {
		p.fail(p.sinks.rec.Write(ev))
	}
	p.lineage.append(ev, correlating && p.corr.ServesFUSE(ev))
	// 3. Print: what the filter selects, to the stream and (when asked) the journal.
	if p.cfg.Filter.Match(ev) {
		if p.eventLog != nil {
			p.eventLog.Info(ev.Text(), zap.Stringer(logkey.Kind, ev.Kind), zap.String(logkey.Syscall, ev.Syscall),
				zap.String(logkey.Errno, ev.Errno), zap.Uint32(logkey.PID, ev.PID), zap.Uint32(logkey.MntNS, ev.MntNS))
		}
		if !p.sinks.discard {
			p.fail(p.sinks.out.Write(ev))
		}
	}
	// 4. Correlate: findings are logged by the correlator's callback.
	if correlating {
		p.corr.Handle(ev)
	}
	// 5. Count.
	p.count(ev)
}

// count updates the event counter and, once a second of event time, the
// gauges that walk the correlator's state.
func (p *pipeline) count(ev *event.Event) {
	if p.mets == nil {
		return
	}
	if ev.Kind != event.KindLost { // counted by mntleak_events_lost_total
		p.mets.Event(ev.Kind.String())
	}
	if p.corr == nil || ev.Time.UnixNano()-p.gaugesAt < int64(gaugeInterval) {
		return
	}
	p.gaugesAt = ev.Time.UnixNano()
	sz := p.corr.Size()
	p.mets.SetState(metrics.State{OpenLeaks: p.corr.OpenLeaks(), Namespaces: sz.Live, DeadNamespaces: sz.Dead,
		Mounts: sz.Mounts, Evicted: sz.Evicted})
}
