package tracer_test

import (
	"context"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/tracer"
)

// stallNow is the perf reorder window for tests whose stalled sink must
// stall the reader at once: a reorder holds events for its window before
// the sink sees them, and would absorb the burst meant to overflow the
// buffer. A nanosecond keeps the reorder stage, releasing each event on
// the reader's next turn.
const stallNow = time.Nanosecond

// TestLostEventsCounted: with a one-page buffer (per CPU, for perf) and a
// stalled reader, a burst of mounts overflows the buffer. Every mount is
// accounted for: received, or counted as lost in the kernel; the loss is
// logged once, and reaches the sink as KindLost events, in stream order,
// whose counts add up to Stats.LostTotal. An EBUSY made after the loss
// comes after a KindLost.
func TestLostEventsCounted(t *testing.T) {
	for _, buf := range []tracer.Buffer{tracer.BufferRingbuf, tracer.BufferPerf} {
		t.Run(buf.String(), func(t *testing.T) { testLostEvents(t, buf) })
	}
}

func testLostEvents(t *testing.T, buf tracer.Buffer) {
	privtest.Require(t)
	privtest.RequireCommands(t, "rmdir")
	core, logs := observer.New(zap.WarnLevel)
	release := make(chan struct{})
	dir := t.TempDir()
	var (
		mu     sync.Mutex
		ours   int
		stream []event.Event // lost and failure events, in delivery order
	)
	sink := func(ev *event.Event) {
		<-release // stall until the burst is over
		mu.Lock()
		defer mu.Unlock()
		switch {
		case ev.Kind == event.KindMount && filepath.Dir(ev.Target) == dir:
			ours++
		case ev.Kind == event.KindLost, ev.Kind == event.KindFailure && filepath.Dir(ev.Path) == dir:
			stream = append(stream, *ev)
		}
	}
	// A long warning interval: the one warning must come from the first loss.
	cfg := tracer.Config{Sink: sink, Buffer: buf, RingBufferBytes: 4096, LostWarnInterval: time.Hour,
		PerfReorderWindow: stallNow}
	tr, err := tracer.New(cfg, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	if tr.Buffer() != buf {
		t.Fatalf("buffer %s, want %s", tr.Buffer(), buf)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()

	const burst = 100 // packed mount records of ~150 bytes: 4 KiB holds ~25
	targets := make([]string, burst)
	for i := range targets {
		targets[i] = privtest.Mkdir(t, filepath.Join(dir, "m"+strconv.Itoa(i)))
		privtest.Mount(t, "mntleak-lost", targets[i], "tmpfs", 0, "")
	}
	close(release)
	lostSeen := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(stream) > 0
	}
	deadline := time.Now().Add(5 * time.Second)
	for !lostSeen() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	// Drained now: an EBUSY on a mountpoint arrives after the KindLost.
	rmdir := exec.Command("rmdir", targets[0])
	if rmdir.Run() == nil {
		t.Fatal("rmdir of a mountpoint succeeded")
	}
	failureSeen := func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(stream) > 0 && stream[len(stream)-1].Kind == event.KindFailure
	}
	for !failureSeen() && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Run detached the programs before it returned: nothing is lost now.
	st, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	lost := st.Lost[event.KindMount]
	if lost == 0 {
		t.Fatalf("no mount event lost with a 4 KiB buffer and %d mounts (received %d)", burst, ours)
	}
	// Other processes may mount too; ours are all either received or lost.
	if uint64(ours)+lost < burst {
		t.Errorf("received %d + lost %d < %d mounts made", ours, lost, burst)
	}
	if n := logs.FilterMessageSnippet("events lost").Len(); n != 1 {
		t.Errorf("%d warnings for lost events, want 1 (one per LostWarnInterval)", n)
	}

	mu.Lock()
	defer mu.Unlock()
	var sum uint64
	var prev time.Time
	failureAt := -1
	for i, ev := range stream {
		if ev.Kind == event.KindFailure {
			failureAt = i
			continue
		}
		sum += ev.Lost
		if ev.Lost == 0 || ev.LostSince.IsZero() || ev.LostSince.After(ev.Time) || ev.LostSince.Before(prev) {
			t.Errorf("lost event %d: %d lost in (%v, %v], previous at %v", i, ev.Lost, ev.LostSince, ev.Time, prev)
		}
		prev = ev.Time
	}
	if sum != st.LostTotal {
		t.Errorf("KindLost events add up to %d, Stats.LostTotal is %d", sum, st.LostTotal)
	}
	if failureAt < 1 || stream[0].Kind != event.KindLost {
		t.Errorf("the rmdir EBUSY (at %d of %d) does not follow a KindLost", failureAt, len(stream))
	}
	if buf == tracer.BufferPerf && st.PerfLostSamples > st.LostTotal {
		t.Errorf("perf buffer lost %d samples, more than the %d counted by the programs", st.PerfLostSamples, st.LostTotal)
	}
	t.Logf("%s: received %d of ours, lost %d (total %d, perf lost samples %d), %d KindLost events",
		buf, ours, lost, st.LostTotal, st.PerfLostSamples, len(stream)-1)
}

// TestLossBeforeFailure: with only the check before each failure event, a
// loss that happened before an EBUSY still reaches the sink just before
// the failure, so a finding on it knows its evidence may be incomplete.
func TestLossBeforeFailure(t *testing.T) {
	for _, buf := range []tracer.Buffer{tracer.BufferRingbuf, tracer.BufferPerf} {
		t.Run(buf.String(), func(t *testing.T) {
			privtest.Require(t)
			privtest.RequireCommands(t, "rmdir")
			release := make(chan struct{})
			dir := t.TempDir()
			var (
				mu     sync.Mutex
				stream []event.Event
			)
			sink := func(ev *event.Event) {
				<-release
				mu.Lock()
				defer mu.Unlock()
				if ev.Kind == event.KindLost || ev.Kind == event.KindFailure && filepath.Dir(ev.Path) == dir {
					stream = append(stream, *ev)
				}
			}
			cfg := tracer.WithoutPeriodicLostCheck(tracer.Config{Sink: sink, Buffer: buf, RingBufferBytes: 4096, PerfReorderWindow: stallNow})
			tr, err := tracer.New(cfg, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			defer tr.Close()
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- tr.Run(ctx) }()

			var targets []string
			for i := 0; i < 100; i++ {
				targets = append(targets, privtest.Mkdir(t, filepath.Join(dir, "m"+strconv.Itoa(i))))
				privtest.Mount(t, "mntleak-lost", targets[i], "tmpfs", 0, "")
			}
			close(release)
			// Let the reader drain the buffer, so the failure record fits.
			time.Sleep(300 * time.Millisecond)
			if exec.Command("rmdir", targets[0]).Run() == nil {
				t.Fatal("rmdir of a mountpoint succeeded")
			}
			deadline := time.Now().Add(5 * time.Second)
			for time.Now().Before(deadline) {
				mu.Lock()
				n := len(stream)
				mu.Unlock()
				if n >= 2 {
					break
				}
				time.Sleep(20 * time.Millisecond)
			}
			mu.Lock()
			got := append([]event.Event(nil), stream...)
			mu.Unlock()
			if len(got) < 2 || got[0].Kind != event.KindLost || got[0].Lost == 0 || got[1].Kind != event.KindFailure {
				kinds := make([]string, len(got))
				for i, ev := range got {
					kinds[i] = ev.Kind.String()
				}
				t.Fatalf("stream %v, want lost then the rmdir failure", kinds)
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			st, err := tr.Stats()
			if err != nil {
				t.Fatal(err)
			}
			if got[0].Lost > st.LostTotal {
				t.Errorf("KindLost says %d, Stats.LostTotal %d", got[0].Lost, st.LostTotal)
			}
		})
	}
}
