package tracer

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestMonoClockIsTheKernels: the clock read without a syscall agrees with
// the kernel's CLOCK_MONOTONIC read with one, before and after it, to the
// microsecond (the first reading's own length, ~100 ns, is its error).
func TestMonoClockIsTheKernels(t *testing.T) {
	c, err := newMonoClock()
	if err != nil {
		t.Fatal(err)
	}
	const slack = 1000 // ns
	for i := 0; i < 1000; i++ {
		var before, after unix.Timespec
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &before); err != nil {
			t.Fatal(err)
		}
		now := c.now()
		if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &after); err != nil {
			t.Fatal(err)
		}
		if now+slack < uint64(before.Nano()) || now > uint64(after.Nano())+slack {
			t.Fatalf("reading %d: %d ns, want within %d ns of the kernel's %d .. %d", i, now, slack, before.Nano(), after.Nano())
		}
	}
}

// TestWallClockFromTheSameReading: the wall offset maps the clock's
// CLOCK_MONOTONIC reading of now to the wall clock of now, to the
// microsecond (both come from the one reading at start).
func TestWallClockFromTheSameReading(t *testing.T) {
	c, err := newMonoClock()
	if err != nil {
		t.Fatal(err)
	}
	before := time.Now()
	got := c.wall().Time(c.now())
	after := time.Now()
	if got.Before(before.Add(-time.Microsecond)) || got.After(after.Add(time.Microsecond)) {
		t.Fatalf("now through the wall offset %s, want within a microsecond of %s .. %s", got, before, after)
	}
}
