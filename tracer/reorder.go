package tracer

import (
	"container/heap"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// Defaults of Config.PerfReorderWindow and Config.PerfReorderMax.
const (
	DefaultPerfReorderWindow = 30 * time.Millisecond
	DefaultPerfReorderMax    = 8192
)

// reorder puts the events of a perf event array back in kernel time order.
// Each CPU's buffer is in order, but the reader drains one CPU after
// another, so an event can arrive after a later one from another CPU; the
// correlator needs one order (a bind before the unmount that leaks it).
// Every event is held until window has passed since its kernel timestamp,
// then released in MonoNS order (arrival order among equal ones). An event
// that comes later than the window is released at once: its place was
// already given away, which lateCount says. At most max events are held:
// past that the oldest go first, window or not (forcedCount), so memory
// stays bounded when the sink falls behind.
//
// The ring buffer needs none of this: it is one buffer for all CPUs, in
// the order records were queued (a packed record is stamped as it is
// copied out, bpf/pack.bpf.h), so Run only builds a reorder for a perf
// buffer.
type reorder struct {
	sink   func(*event.Event)
	window uint64 // ns
	max    int
	held   eventHeap
	seq    uint64 // arrival counter, for a stable order among equal times
	// last is the MonoNS of the last event released: nothing released
	// after it may be earlier, unless it came too late.
	last        uint64
	lateCount   uint64
	forcedCount uint64
}

func newReorder(sink func(*event.Event), window time.Duration, max int) *reorder {
	return &reorder{sink: sink, window: uint64(window), max: max}
}

// push holds ev (the reorder keeps the pointer); past the bound the
// oldest event goes to the sink at once.
func (r *reorder) push(ev *event.Event) {
	if ev.MonoNS < r.last {
		// Too late to take its place: holding it would not help.
		r.lateCount++
		r.sink(ev)
		return
	}
	heap.Push(&r.held, heldEvent{ev: ev, seq: r.seq})
	r.seq++
	for len(r.held) > r.max {
		r.forcedCount++
		r.pop()
	}
}

// release hands the sink every event whose window has passed at kernel
// time now (CLOCK_MONOTONIC ns).
func (r *reorder) release(now uint64) {
	for len(r.held) > 0 && r.held[0].ev.MonoNS+r.window <= now {
		r.pop()
	}
}

// flush hands the sink everything held, in order.
func (r *reorder) flush() {
	for len(r.held) > 0 {
		r.pop()
	}
}

// nextDue is the kernel time at which the oldest held event is due, and
// false when nothing is held.
func (r *reorder) nextDue() (uint64, bool) {
	if len(r.held) == 0 {
		return 0, false
	}
	return r.held[0].ev.MonoNS + r.window, true
}

func (r *reorder) pop() {
	h := heap.Pop(&r.held).(heldEvent)
	r.last = max(r.last, h.ev.MonoNS)
	r.sink(h.ev)
}

// output is where Run sends events: straight to the sink for the ring
// buffer, through a reorder for a perf buffer. It also keeps the reader's
// deadline, so that Run wakes up for the next release and the next lost
// check even when no record comes.
type output struct {
	t        *Tracer
	ro       *reorder // nil: no reordering
	deadline time.Time
}

func newOutput(t *Tracer) *output {
	o := &output{t: t}
	if t.buffer == BufferPerf && t.cfg.PerfReorderWindow > 0 {
		o.ro = newReorder(t.cfg.Sink, t.cfg.PerfReorderWindow, t.cfg.PerfReorderMax)
	}
	return o
}

func (o *output) emit(ev *event.Event) {
	if o.ro == nil {
		o.t.cfg.Sink(ev)
		return
	}
	o.ro.push(ev)
	o.t.reorderLate.Store(o.ro.lateCount)
	o.t.reorderForced.Store(o.ro.forcedCount)
}

// at is the kernel time for an event that must reach the sink just before
// one at mono (a KindLost before a failure): mono itself when events are
// reordered (the earlier arrival goes first among equal times), else 0
// (now: the order of emission is the order of delivery).
func (o *output) at(mono uint64) uint64 {
	if o.ro == nil {
		return 0
	}
	return mono
}

// due releases what is due at now and sets the reader's deadline to the
// earlier of next (the lost check) and the next release.
func (o *output) due(now, next time.Time) {
	if o.ro != nil {
		// Timestamps are CLOCK_MONOTONIC: the wall clock may step.
		var ts unix.Timespec
		if unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts) == nil {
			mono := uint64(ts.Nano())
			o.ro.release(mono)
			if at, ok := o.ro.nextDue(); ok {
				if d := now.Add(time.Duration(at - mono)); d.Before(next) {
					next = d
				}
			}
		}
	}
	if !next.Equal(o.deadline) {
		o.deadline = next
		o.t.reader.setDeadline(next)
	}
}

// flush hands the sink everything still held: Run is returning.
func (o *output) flush() {
	if o.ro != nil {
		o.ro.flush()
	}
}

type heldEvent struct {
	ev  *event.Event
	seq uint64
}

// eventHeap is a min-heap by (MonoNS, arrival).
type eventHeap []heldEvent

func (h eventHeap) Len() int { return len(h) }
func (h eventHeap) Less(i, j int) bool {
	if h[i].ev.MonoNS != h[j].ev.MonoNS {
		return h[i].ev.MonoNS < h[j].ev.MonoNS
	}
	return h[i].seq < h[j].seq
}
func (h eventHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *eventHeap) Push(x any)   { *h = append(*h, x.(heldEvent)) }
func (h *eventHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = heldEvent{}
	*h = old[:len(old)-1]
	return x
}
