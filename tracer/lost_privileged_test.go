package tracer_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/privtest"
	"github.com/mntleak/mntleak/tracer"
)

// TestLostEventsCounted: with a one-page ring buffer and a stalled reader,
// a burst of mounts overflows the buffer. Every mount is accounted for:
// received, or counted as lost in the kernel, and the loss is logged.
func TestLostEventsCounted(t *testing.T) {
	privtest.Require(t)
	core, logs := observer.New(zap.WarnLevel)
	release := make(chan struct{})
	dir := t.TempDir()
	var ours int
	sink := func(ev *event.Event) {
		<-release // stall until the burst is over
		if ev.Kind == event.KindMount && filepath.Dir(ev.Target) == dir {
			ours++
		}
	}
	tr, err := tracer.New(tracer.Config{Sink: sink, RingBufferBytes: 4096, LostCheckInterval: 20 * time.Millisecond}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	defer tr.Close()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()

	const burst = 20
	for i := 0; i < burst; i++ {
		target := privtest.Mkdir(t, filepath.Join(dir, "m"+string(rune('a'+i))))
		privtest.Mount(t, "mntleak-lost", target, "tmpfs", 0, "")
	}
	close(release)
	// The warning comes from the periodic check.
	deadline := time.Now().Add(5 * time.Second)
	for logs.FilterMessageSnippet("events lost").Len() == 0 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // let the reader drain what fitted
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
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
	if logs.FilterMessageSnippet("events lost").Len() == 0 {
		t.Error("no warning logged for lost events")
	}
}
