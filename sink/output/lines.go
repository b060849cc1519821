package output

import (
	"io"
	"time"
)

// Lines is a Writer's queue for text that is already formatted (the log
// on stderr): each Write of its writers is one line, as zap writes each
// entry in one call. Writes never block on the destination.
type Lines struct{ q *queue }

// NewLines returns a queue of lines for w; marker makes the line put where
// lines were dropped.
func NewLines(w io.Writer, opts Options, marker func(n uint64, since time.Time) []byte) *Lines {
	q := newQueue(w, nil, opts.QueueBytes, marker, nil)
	q.closeTimeout, q.forcedMax = opts.CloseTimeout, opts.ForcedBytes
	return &Lines{q: q}
}

// Writer returns a writer into the queue; a forced one's lines are kept
// over the capacity, up to Options.ForcedBytes (findings).
func (l *Lines) Writer(force bool) io.Writer { return linesWriter{l.q, force} }

// Dropped returns how many lines were dropped.
func (l *Lines) Dropped() uint64 { return l.q.dropped.Load() }

// Flush writes out queued lines, waiting at most Options.CloseTimeout.
func (l *Lines) Flush() error { return l.q.request(false, l.q.closeTimeout) }

// Wake has the lines queued so far written out now, not at the next
// FlushInterval tick, without waiting for the write: for a line someone
// waits for that is no finding (the daemon's "tracing", its readiness).
func (l *Lines) Wake() { l.q.wakeDrain() }

// CloseWithin writes out queued lines, waiting at most d, and stops the
// drain; later writes fail.
func (l *Lines) CloseWithin(d time.Duration) error { return l.q.close(max(d, time.Millisecond)) }

type linesWriter struct {
	q     *queue
	force bool
}

func (w linesWriter) Write(p []byte) (int, error) {
	if err := w.q.push(p, w.force); err != nil {
		return 0, err
	}
	return len(p), nil
}
