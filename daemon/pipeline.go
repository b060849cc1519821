package daemon

import (
	"strings"
	"time"

	"go.uber.org/zap"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/logkey"
	"github.com/mntleak/mntleak/kubeletpath"
	"github.com/mntleak/mntleak/metrics"
	"github.com/mntleak/mntleak/state"
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
	mounts   *mountWatch           // the kernel's mount notes (mountnotes.go); nil without them
	clock    func() time.Time      // the present in the events' time (tracer.Now); nil: the wall clock
	mountsAt int64                 // event time (unix ns) the watched namespaces were last synced
	// mono is CLOCK_MONOTONIC now, as an event's MonoNS (tracer.MonoNow);
	// nil in tests: every event drains the mount notes.
	mono      func() uint64
	drainedAt uint64 // mono when the last drain of the mount notes began
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
	// 0. The kernel's mount notes queued so far, recorded and applied
	//    before the event (mountnotes.go).
	if correlating && p.mounts != nil {
		p.notes(ev)
	}
	// 1. Prepare, in one step: what the engine and the findings' names
	//    need of the event and the kernel did not give, read now (by a
	//    replay it may be gone).
	if correlating {
		p.prepare(ev)
	}
	// 2. Record and persist: everything, before any filter. (The exit of
	//    a FUSE server, which the lineage keeps too, comes back from the
	//    engine: lineage.go.)
	if p.sinks.rec != nil {
		p.fail(p.sinks.rec.Write(ev))
	}
	p.lineage.append(ev, false)
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
	// 4. Correlate, the one hand-off of the event to the engine: findings
	//    are logged by the correlator's callback.
	if correlating {
		p.corr.Handle(ev)
		p.syncMounts(ev)
	}
	// 5. Count.
	p.count(ev)
}

// prepare is the pre-correlation step: it fills in what the engine needs
// of ev and the kernel did not give (correlate.Prepare with the daemon's
// Sources: a failure's executable, the cgroup of the process a finding may
// name, a new namespace's birth id, a teardown call's device), and asks
// the runtimes about the container and pod that cgroup names, off the
// event path, so a finding names them once they are gone.
func (p *pipeline) prepare(ev *event.Event) {
	p.src.observe(ev)
	if err := correlate.Prepare(ev, p.src); err != nil {
		p.log.Warn("event not fully prepared", zap.Error(err))
	}
	p.findings.warm(ev)
}

// now is the present in the events' time (the tracer's clock), the wall
// clock where the pipeline has none (tests).
func (p *pipeline) now() time.Time {
	if p.clock == nil {
		return time.Now()
	}
	return p.clock()
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
	p.mets.SetState(metrics.State{OpenLeaks: p.corr.OpenLeaks(), Namespaces: sz.Live, Watched: p.mounts.watched(),
		DeadNamespaces: sz.Dead, Mounts: sz.Mounts, Evicted: sz.Evicted})
}

// The per-event calls into the stores the pipeline feeds: the persistent
// lineage (lineage.go) and the findings' path (findings.go).

// append keeps ev if it belongs in the lineage, or if the correlator
// says it is the exit of a FUSE server (fuseServer): no /proc shows when a
// server died, and a later `mntleak why` or a restarted daemon cites it.
// It is nil-safe.
func (s *lineageStore) append(ev *event.Event, fuseServer bool) {
	if s == nil || s.broken.Load() || !(state.Keep(ev) || fuseServer) {
		return
	}
	s.fail(s.l.Append(ev))
}

// warm asks, off the event path, about the container and pod ev's cgroup
// path names, and about the pod whose directory under the kubelet's root
// ev's path lies in (nothing when they name none, or no runtime is
// asked). The latter is the pod a teardown's finding is about: the
// kubelet's unmount of its volume comes just before the API server
// forgets it, and a leak is named after its settle, by when the pod may
// be gone; the pod may be older than the daemon, so no earlier event
// named it.
func (fs *findings) warm(ev *event.Event) {
	if fs == nil || fs.warmer == nil {
		return
	}
	if ev.Cgroup != "" {
		fs.warmer.Warm(correlate.ContainerID(ev.Cgroup), correlate.PodUID(ev.Cgroup))
	}
	for _, path := range []string{ev.Path, ev.Target} {
		// The prefix first: most events' paths are not the kubelet's, and
		// Parse cleans the path (an allocation) before it looks.
		if !strings.HasPrefix(path, fs.kubeletRoot) {
			continue
		}
		if v, ok := kubeletpath.Parse(fs.kubeletRoot, path); ok {
			fs.warmer.Warm("", v.PodUID)
			return
		}
	}
}
