package tracer

import (
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// monoClock reads CLOCK_MONOTONIC without a syscall: Go's monotonic clock
// is CLOCK_MONOTONIC read through the vDSO, so the kernel's reading at one
// instant plus the time Go's clock saw pass since is the kernel's reading
// now (to the ~100 ns the first reading took). unix.ClockGettime is a
// syscall, and the daemon's own syscalls pass through the tracer's hooks:
// read for every event, it was 6% of the daemon's CPU in a mount storm.
type monoClock struct {
	base  uint64    // CLOCK_MONOTONIC, ns, at start
	start time.Time // the same instant, with Go's monotonic reading
}

func newMonoClock() (monoClock, error) {
	var ts unix.Timespec
	before := time.Now()
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		return monoClock{}, err
	}
	after := time.Now()
	return monoClock{base: uint64(ts.Nano()), start: before.Add(after.Sub(before) / 2)}, nil
}

// wall is the offset between the wall clock and CLOCK_MONOTONIC
// (bpf_ktime_get_ns) at the clock's start, the one reading both come
// from. The offset drifts with NTP slewing (at most 0.5 ms a second), far
// below the resolution findings need; what the daemon compares with an
// event's time it stamps through the same offset (Now).
func (c monoClock) wall() event.WallClock {
	return event.WallClock{OffsetNS: c.start.UnixNano() - int64(c.base)}
}

// now is CLOCK_MONOTONIC now, in nanoseconds.
func (c monoClock) now() uint64 { return c.base + uint64(time.Since(c.start)) }

// Now is the present as the events' times are told: CLOCK_MONOTONIC through
// the offset measured at start. What the daemon compares with an event's
// time (when it read a mount note) it stamps with Now, not the wall clock,
// which NTP may have moved apart from the events' times since the start.
func (t *Tracer) Now() time.Time { return t.clock.Time(t.mono.now()) }

// MonoNow is CLOCK_MONOTONIC now, in the nanoseconds of an event's MonoNS
// (bpf_ktime_get_ns): what the kernel did before it, an event stamped
// earlier did too.
func (t *Tracer) MonoNow() uint64 { return t.mono.now() }
