package tracer_test

import (
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/tracer"
)

// TestNowIsTheEventsTime: the tracer's Now, read before and after a
// mount(2), brackets the mount's event time: both are the kernel's
// CLOCK_MONOTONIC through one offset, so what the daemon stamps with Now
// (when it read a mount note) and an event's time can be compared
// whatever NTP did to the wall clock since the start (here an hour: the
// wall clock does not bracket the event).
func TestNowIsTheEventsTime(t *testing.T) {
	c := startTracerWith(t, tracer.WithClockSkew(tracer.Config{}, time.Hour), zaptest.NewLogger(t))
	target := privtest.Mkdir(t, filepath.Join(t.TempDir(), "now"))
	before := c.tr.Now()
	tid := onThread(func() {
		if err := unix.Mount("mntleak-now", target, "tmpfs", 0, "size=1m"); err != nil {
			t.Errorf("mount: %v", err)
		}
	})
	after := c.tr.Now()
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
	ev := c.waitFor(t, "mount", func(e *event.Event) bool {
		return e.Kind == event.KindMount && e.TID == uint32(tid) && e.Target == target
	})
	if ev.Time.Before(before) || ev.Time.After(after) {
		t.Errorf("event time %s, want within Now before and after the call: %s .. %s", ev.Time, before, after)
	}
	if wall := time.Now(); !ev.Time.After(wall.Add(time.Hour - time.Minute)) {
		t.Errorf("event time %s, wall clock %s: want the skew of an hour between them", ev.Time, wall)
	}
}
