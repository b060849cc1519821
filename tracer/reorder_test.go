package tracer

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
)

// step is one thing done to a reorder: push an event (id, at mono ns),
// release at a time, or flush.
type step struct {
	push    uint32 // event id (its PID); 0: no push
	mono    uint64
	lost    bool   // push a KindLost
	release uint64 // release at this time, when not 0
	flush   bool
}

func push(id uint32, mono uint64) step     { return step{push: id, mono: mono} }
func pushLost(id uint32, mono uint64) step { return step{push: id, mono: mono, lost: true} }
func releaseAt(now uint64) step            { return step{release: now} }

// TestReorderStage: events come out in MonoNS order (arrival order among equal
// times) once the window has passed since their time; an event later than
// the window is released at once and counted; past max the oldest go
// first, counted; a KindLost keeps its place by time; flush releases all.
func TestReorderStage(t *testing.T) {
	const w = 30 // window, ns
	tests := []struct {
		name         string
		max          int
		steps        []step
		want         []uint32 // ids in sink order
		held         int      // still held at the end
		late, forced uint64
	}{
		{"nothing due before the window", 10, []step{push(1, 100), releaseAt(129)}, nil, 1, 0, 0},
		{"due at the window", 10, []step{push(1, 100), releaseAt(130)}, []uint32{1}, 0, 0, 0},
		{"two CPUs, read out of order", 10,
			[]step{push(2, 110), push(3, 120), push(1, 100), releaseAt(200)}, []uint32{1, 2, 3}, 0, 0, 0},
		{"only what is due", 10,
			[]step{push(3, 150), push(1, 100), push(2, 120), releaseAt(145)}, []uint32{1}, 2, 0, 0},
		{"equal times keep arrival order", 10,
			[]step{push(1, 100), push(2, 100), push(3, 90), releaseAt(200)}, []uint32{3, 1, 2}, 0, 0, 0},
		{"late event released at once", 10,
			[]step{push(2, 200), releaseAt(230), push(1, 150)}, []uint32{2, 1}, 0, 1, 0},
		{"late but not earlier than the last one released", 10,
			[]step{push(1, 200), releaseAt(230), push(2, 200), releaseAt(230)}, []uint32{1, 2}, 0, 0, 0},
		{"overflow flushes the oldest", 2,
			[]step{push(3, 130), push(1, 110), push(2, 120)}, []uint32{1}, 2, 0, 1},
		{"overflow, then an older event is late", 2,
			[]step{push(3, 130), push(2, 120), push(4, 140), push(1, 110)}, []uint32{2, 1}, 2, 1, 1},
		{"lost keeps its place by time", 10,
			[]step{push(1, 100), push(3, 140), pushLost(2, 120), releaseAt(1000)}, []uint32{1, 2, 3}, 0, 0, 0},
		{"lost placed at a failure's time, emitted first, goes first", 10,
			[]step{push(3, 130), pushLost(1, 100), push(2, 100), releaseAt(1000)}, []uint32{1, 2, 3}, 0, 0, 0},
		{"flush releases everything in order", 10,
			[]step{push(3, 300), push(1, 100), push(2, 200), {flush: true}}, []uint32{1, 2, 3}, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []uint32
			var kinds []event.Kind
			r := newReorder(func(ev *event.Event) {
				got = append(got, ev.PID)
				kinds = append(kinds, ev.Kind)
			}, time.Duration(w), tt.max)
			for _, s := range tt.steps {
				switch {
				case s.push != 0:
					kind := event.KindMount
					if s.lost {
						kind = event.KindLost
					}
					r.push(&event.Event{Kind: kind, PID: s.push, MonoNS: s.mono})
				case s.release != 0:
					r.release(s.release)
				case s.flush:
					r.flush()
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("sink got %v, want %v", got, tt.want)
			}
			if len(r.held) != tt.held || r.lateCount != tt.late || r.forcedCount != tt.forced {
				t.Errorf("held %d late %d forced %d, want %d %d %d", len(r.held), r.lateCount, r.forcedCount, tt.held, tt.late, tt.forced)
			}
			if next, ok := r.nextDue(); ok != (tt.held > 0) || (ok && next != r.held[0].ev.MonoNS+w) {
				t.Errorf("nextDue = %d, %v with %d held", next, ok, len(r.held))
			}
		})
	}
}

// TestReorderLostBeforeFailure: a KindLost placed at a failure's time and
// emitted before it reaches the sink before it, and both after every
// earlier event, however they arrived.
func TestReorderLostBeforeFailure(t *testing.T) {
	var got []string
	r := newReorder(func(ev *event.Event) { got = append(got, fmt.Sprintf("%s@%d", ev.Kind, ev.MonoNS)) }, time.Duration(30), 10)
	r.push(&event.Event{Kind: event.KindUmount, MonoNS: 120})
	r.push(&event.Event{Kind: event.KindLost, MonoNS: 100})
	r.push(&event.Event{Kind: event.KindFailure, MonoNS: 100})
	r.push(&event.Event{Kind: event.KindMount, MonoNS: 90})
	r.release(1000)
	if want := []string{"mount@90", "lost@100", "failure@100", "umount@120"}; !slices.Equal(got, want) {
		t.Errorf("sink got %v, want %v", got, want)
	}
}

// TestNewOutput: only a perf buffer gets a reorder stage (the ring buffer
// is in order already and must not wait), unless the window is negative.
func TestNewOutput(t *testing.T) {
	tests := []struct {
		buffer  Buffer
		window  time.Duration
		reorder bool
	}{
		{BufferRingbuf, DefaultPerfReorderWindow, false},
		{BufferPerf, DefaultPerfReorderWindow, true},
		{BufferPerf, -1, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/%v", tt.buffer, tt.window), func(t *testing.T) {
			var sunk int
			tr := &Tracer{buffer: tt.buffer, cfg: Config{Sink: func(*event.Event) { sunk++ }, PerfReorderWindow: tt.window, PerfReorderMax: 4}}
			o := newOutput(tr)
			if (o.ro != nil) != tt.reorder {
				t.Fatalf("reorder stage: %v, want %v", o.ro != nil, tt.reorder)
			}
			o.emit(&event.Event{MonoNS: 1})
			if want := map[bool]int{true: 0, false: 1}[tt.reorder]; sunk != want {
				t.Errorf("%d events at the sink right after emit, want %d", sunk, want)
			}
			o.flush()
			if sunk != 1 {
				t.Errorf("%d events at the sink after flush, want 1", sunk)
			}
		})
	}
}
