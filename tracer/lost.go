package tracer

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/logkey"
)

// Defaults of Config.LostCheckInterval and Config.LostWarnInterval.
const (
	DefaultLostCheckInterval = 200 * time.Millisecond
	DefaultLostWarnInterval  = 5 * time.Second
)

// lostWatch turns growth of the kernel's lost counters into KindLost
// events, delivered in stream order, and into warnings. It belongs to the
// Run goroutine: the sink only ever sees events from there.
type lostWatch struct {
	t    *Tracer
	emit func(*event.Event) // Run's output: the sink, or the perf reorder
	// next is when the periodic check is due.
	next time.Time
	seen uint64 // LostTotal at the previous check
	// since is when the previous check ran: the loss a check finds
	// happened after it.
	since    time.Time
	warnedAt time.Time
	unwarned uint64 // lost since the last warning
}

func newLostWatch(t *Tracer, emit func(*event.Event), now time.Time) *lostWatch {
	return &lostWatch{t: t, emit: emit, next: now, since: now}
}

// due runs the periodic check when its time has come. It costs one clock
// read, so Run calls it for every record. Run also sets next as the
// reader's deadline, so an idle reader still wakes up for it.
func (w *lostWatch) due(now time.Time) {
	if w.t.cfg.noPeriodicCheck {
		w.next = now.Add(w.t.cfg.LostCheckInterval)
		return
	}
	if now.Before(w.next) {
		return
	}
	w.check(now, 0)
	w.next = now.Add(w.t.cfg.LostCheckInterval)
}

// check reads the counters (one map lookup) and, when they grew since the
// previous check, emits a KindLost event, at kernel time before (when not
// zero and earlier than now: the failure event it must precede), else now.
// It warns at most once per LostWarnInterval, with everything lost since
// the previous warning.
func (w *lostWatch) check(now time.Time, before uint64) {
	lost, total, err := w.t.lostCounts()
	if err != nil {
		// Retried at the next check, which then reports the loss with
		// the interval it belongs to. Counted, and said the first time.
		if w.t.lostReadErrors.Add(1) == 1 {
			w.t.log.Warn("lost-event counters unreadable; retried at every check", zap.Error(err))
		}
		return
	}
	if total > w.seen {
		n := total - w.seen
		w.seen = total
		w.unwarned += n
		mono := uint64(now.UnixNano() - w.t.clock.OffsetNS)
		if before != 0 && before < mono {
			mono = before
		}
		w.emit(&event.Event{
			Kind:      event.KindLost,
			Time:      now,
			MonoNS:    mono,
			SyscallNr: -1,
			Lost:      n,
			LostSince: w.since,
		})
	}
	w.since = now
	if w.unwarned == 0 || (!w.warnedAt.IsZero() && now.Sub(w.warnedAt) < w.t.cfg.LostWarnInterval) {
		return
	}
	fields := []zap.Field{zap.Uint64(logkey.Lost, w.unwarned), zap.Uint64(logkey.LostTotal, total),
		zap.Stringer(logkey.Buffer, w.t.buffer)}
	for _, k := range event.KernelKinds() {
		if lost[k] > 0 {
			fields = append(fields, zap.Uint64(logkey.Lost+"_"+k.String(), lost[k]))
		}
	}
	w.t.log.Warn("events lost: the buffer was full", fields...)
	w.warnedAt, w.unwarned = now, 0
}

// lostCounts sums the kernel's per-CPU lost counters by kind.
func (t *Tracer) lostCounts() (map[event.Kind]uint64, uint64, error) {
	var perCPU []mountLostCounts
	if err := t.objs.mount.Lost.Lookup(uint32(0), &perCPU); err != nil {
		return nil, 0, fmt.Errorf("read lost counters: %w", err)
	}
	lost := map[event.Kind]uint64{}
	var total uint64
	for _, k := range event.KernelKinds() {
		var sum uint64
		for _, c := range perCPU {
			sum += c.N[k]
		}
		if sum > 0 {
			lost[k] = sum
			total += sum
		}
	}
	return lost, total, nil
}
