package tracer

import (
	"errors"
	"fmt"
	"time"
)

// QuietExitDelay is the longest a process exit's record waits in the ring
// buffer while exits are quiet (SetQuietExits): the reader wakes at least
// this often then.
const QuietExitDelay = 50 * time.Millisecond

// SetQuietExits makes the records of process exits wake the reader (off,
// as at the start) or not (on): a quiet exit is read with the next record
// that wakes the reader (every other kind does, and a quarter of the
// buffer pending does), or at the reader's next wakeup, at most
// QuietExitDelay later. The order of the records is unchanged, and so is
// every event's time (the kernel's): what changes is when the sink gets an
// exit. Exits are most of a node's records, and each wakeup costs the
// reader more than the record it brings.
//
// It is for a consumer that need not act on an exit at once: the daemon
// turns it on while the kernel's own mount notes keep its mount tables
// true (before them, an exit was what made a quiet namespace's table be
// read in time). A perf buffer has no such wakeups: an error then.
func (t *Tracer) SetQuietExits(on bool) error {
	if t.buffer != BufferRingbuf {
		return errors.New("quiet exits: only with the ring buffer")
	}
	var v uint32
	if on {
		v = 1
	}
	if err := t.objs.nsproc.QuietExits.Set(v); err != nil {
		return fmt.Errorf("set quiet_exits in BPF object nsproc: %w", err)
	}
	t.quietExits.Store(on)
	return nil
}

// quietWake is the reader's next wakeup for quiet exits after now (zero
// when exits are not quiet): advanced only once it has passed, so the
// reader's deadline changes once per QuietExitDelay, not per record.
func (t *Tracer) quietWake(now, at time.Time) time.Time {
	if !t.quietExits.Load() || t.cfg.noQuietWake {
		return time.Time{}
	}
	if now.Before(at) {
		return at
	}
	return now.Add(QuietExitDelay)
}
