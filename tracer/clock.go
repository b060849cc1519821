package tracer

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// wallClock measures the offset between the wall clock and CLOCK_MONOTONIC
// (bpf_ktime_get_ns) once. The offset drifts only with NTP slewing, which is
// far below the resolution findings need; a long-running daemon re-measures
// it through resync.
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
