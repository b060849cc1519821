package daemon

import (
	"time"

	"go.uber.org/zap"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/stream"
	"github.com/mntleak/mntleak/tracer"
)

// syncInterval is how often, in event time, the watched namespaces are
// matched with the live ones (a namespace's creation is watched at once).
const syncInterval = 125 * time.Millisecond

// openMountWatch watches the namespaces corr tracks (a namespace without
// a known process through one of the tracer's tasks, when tasks is not
// nil), or returns nil, said once, where the kernel has no mount-namespace
// marks: the correlator re-reads tables as before.
func openMountWatch(corr *correlate.Correlator, tasks func() ([]event.Task, bool, error), log *zap.Logger) *mountWatch {
	mw, err := newMountWatch(corr.HostNS(), log)
	if err != nil {
		log.Info("mount notes off: tables are re-read when needed", zap.Error(err))
		return nil
	}
	mw.tasks = tasks
	mw.sync(corr.Lineage().Live(), watchPerSync)
	log.Info("mount notes on", zap.Int("namespaces", len(mw.groups)))
	return mw
}

// quietExits lets exits' records wait for the reader's next wakeup while
// the kernel's mount notes keep the tables true (notes): without them an
// exit is what makes a quiet namespace's table be read before a later
// teardown detaches its copy, and every exit wakes the reader.
func quietExits(t *tracer.Tracer, notes bool, log *zap.Logger) {
	if !notes {
		return
	}
	if err := t.SetQuietExits(true); err != nil {
		log.Info("exits wake the reader", zap.Error(err))
		return
	}
	log.Info("exits quiet", zap.Duration("at_most", tracer.QuietExitDelay))
}

// notes records and applies the kernel's mount notes queued so far, before
// the event being handled: recorded first, so a replay applies them at
// the same point (correlate.Replay). They are stamped in the events' time:
// an unmount's note is read after its event's time (correlate:
// takeUnmountNote).
//
// A syscall's notes are queued before its event is stamped (the kernel
// notifies in the call, the tracer stamps at its exit), so a drain that
// began after that stamp has them: such an event needs no drain of its
// own (drainedFor). Behind a burst of calls the reader drains once per
// catch-up, not once per event (two syscalls each, and a statmount of
// every attach since the last).
func (p *pipeline) notes(ev *event.Event) {
	if p.drainedFor(ev) {
		return
	}
	if p.mono != nil {
		p.drainedAt = p.mono()
	}
	notes, err := p.mounts.drain(p.now)
	if err != nil {
		p.log.Warn("mount notes", zap.Error(err))
	}
	for i := range notes {
		if p.sinks.rec != nil {
			p.fail(p.sinks.rec.WriteJSON(stream.NoteLine{Note: &notes[i]}))
		}
		p.corr.Note(notes[i])
	}
}

// drainMargin is how long before the last drain began an event must have
// been stamped for the drain to hold its syscall's notes: far above the
// skew of two CPUs' clocks and the time a note takes to become visible
// to another CPU.
const drainMargin = 50 * time.Microsecond

// drainedFor reports whether the last drain holds every note ev can need
// before it: ev is a syscall's (a process's fork and exit are stamped
// before the kernel tears a namespace down; they drain as before),
// stamped drainMargin before that drain began, and the watch has no note
// of its own waiting (a sync's watch on and off).
func (p *pipeline) drainedFor(ev *event.Event) bool {
	return p.mono != nil && ev.SyscallNr >= 0 && ev.MonoNS+uint64(drainMargin) < p.drainedAt && !p.mounts.saying()
}

// syncMounts watches a namespace ev created at once, and matches the
// watched namespaces with the live ones once per syncInterval of event
// time (namespaces a process list found, those that died).
func (p *pipeline) syncMounts(ev *event.Event) {
	if p.mounts == nil {
		return
	}
	p.syncLive(ev, p.corr.Lineage().Live)
}

// syncLive is syncMounts with the live namespaces asked of live, only
// when a sync is due (a list of every namespace: not for every event).
func (p *pipeline) syncLive(ev *event.Event, live func() []*correlate.Namespace) {
	created := (ev.Kind == event.KindUnshare && ev.Ret == 0 && ev.MntNSAfter != ev.MntNSBefore) || ev.Kind == event.KindNewNSFork
	switch {
	case ev.Time.UnixNano()-p.mountsAt >= int64(syncInterval):
		p.mountsAt = ev.Time.UnixNano()
		p.mounts.sync(live(), watchPerSync)
	case created:
		// The namespace just made, the newest, alone: a burst of container
		// starts marks no backlog on the event path.
		p.mounts.sync(live(), 1)
	}
}
