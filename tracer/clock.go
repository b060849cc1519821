package tracer

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// wallClock measures the offset between the wall clock and CLOCK_MONOTONIC
// (bpf_ktime_get_ns) once. The offset drifts with NTP slewing (at most
// 0.5 ms a second), far below the resolution findings need; what the
// daemon compares with an event's time it stamps through the same offset
// (Now).
func wallClock() (event.WallClock, error) {
	var ts unix.Timespec
	before := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return event.WallClock{}, err
	}
	after := time.Now()
	wall := before.UnixNano() + after.Sub(before).Nanoseconds()/2
	return event.WallClock{OffsetNS: wall - ts.Nano()}, nil
}

// Now is the present as the events' times are told: CLOCK_MONOTONIC through
// the offset measured at start. What the daemon compares with an event's
// time (when it read a mount note) it stamps with Now, not the wall clock,
// which NTP may have moved apart from the events' times since the start.
func (t *Tracer) Now() time.Time {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return time.Now()
	}
	return t.clock.Time(uint64(ts.Nano()))
}
