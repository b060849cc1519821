package output

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/mntleak/mntleak/event"
)

// Format is an output format.
type Format int

// Formats.
const (
	JSON Format = iota + 1
	Text
	// Human is for a person at a terminal: events as Text, each finding
	// as its short form (finding.Block: a headline, then detail lines).
	Human
)

// ParseFormat parses "json", "text" or "human".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "json":
		return JSON, nil
	case "text":
		return Text, nil
	case "human":
		return Human, nil
	}
	return 0, fmt.Errorf("unknown format %q: want human, text or json", s)
}

func (f Format) String() string {
	switch f {
	case JSON:
		return "json"
	case Text:
		return "text"
	case Human:
		return "human"
	}
	return fmt.Sprintf("format(%d)", int(f))
}

// FlushInterval bounds how long a written event may sit in the queue.
const FlushInterval = 100 * time.Millisecond

// Options tune a Writer.
type Options struct {
	// QueueBytes caps what may wait for the destination; lines over it are
	// dropped and counted. Zero means DefaultQueueBytes.
	QueueBytes int
	// CloseTimeout bounds how long Close waits for the destination. Zero
	// means no limit (mntleak replay, whose output must be whole).
	CloseTimeout time.Duration
	// ForcedBytes caps what may wait including the lines that must not be
	// dropped (findings); zero means no cap.
	ForcedBytes int
}

// Writer writes events in one format, through a bounded queue drained by a
// goroutine of its own: Write never blocks on the destination. It is safe
// for concurrent use.
type Writer struct {
	format Format
	q      *queue

	mu      sync.Mutex // guards the encoder and its scratch buffers
	scratch bytes.Buffer
	enc     *json.Encoder
	line    []byte // an event's JSON line (Write)
}

// NewWriter returns a Writer on w with the default options. If w is an
// io.Closer that the Writer should own (a record file), pass it as owned;
// Close then closes it.
func NewWriter(w io.Writer, format Format, owned io.Closer) *Writer {
	return newWriter(w, owned, nil, format, Options{})
}

// NewWriterOptions is NewWriter with options.
func NewWriterOptions(w io.Writer, format Format, owned io.Closer, opts Options) *Writer {
	return newWriter(w, owned, nil, format, opts)
}

// OpenFile opens path (mode 0600) for a Writer that owns it; truncate
// starts it empty, otherwise lines are appended. Reopen opens the path
// anew, appending, for logrotate.
func OpenFile(path string, format Format, truncate bool, opts Options) (*Writer, error) {
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if truncate {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(path, flags, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open output file %s: %w", path, err)
	}
	reopen := func() (io.Writer, io.Closer, error) {
		f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
		if err != nil {
			return nil, nil, fmt.Errorf("reopen output file %s: %w", path, err)
		}
		return f, f, nil
	}
	return newWriter(f, f, reopen, format, opts), nil
}

func newWriter(w io.Writer, owned io.Closer, reopen func() (io.Writer, io.Closer, error), format Format, opts Options) *Writer {
	wr := &Writer{format: format}
	wr.enc = json.NewEncoder(&wr.scratch)
	wr.enc.SetEscapeHTML(false)
	wr.q = newQueue(w, owned, opts.QueueBytes, wr.lostLine, reopen)
	wr.q.closeTimeout, wr.q.forcedMax = opts.CloseTimeout, opts.ForcedBytes
	return wr
}

// lostLine is the marker put where lines were dropped: a lost event, as
// the reader synthesizes for the kernel's losses, so that a consumer (and
// mntleak replay) knows the stream has a gap there.
func (w *Writer) lostLine(n uint64, since time.Time) []byte {
	ev := &event.Event{Kind: event.KindLost, Time: time.Now(), SyscallNr: -1, Lost: n, LostSince: since, Comm: "mntleak"}
	if w.format != JSON {
		return []byte(ev.Text() + "\n")
	}
	b, err := json.Marshal(ev)
	if err != nil {
		return nil
	}
	return append(b, '\n')
}

// Write queues one event line. A line the queue has no room for is
// dropped and counted (Dropped); the error is the destination's, once it
// failed (a closed pipe).
func (w *Writer) Write(ev *event.Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.format != JSON {
		w.scratch.Reset()
		w.scratch.WriteString(ev.Text())
		w.scratch.WriteByte('\n')
		return w.q.push(w.scratch.Bytes(), false)
	}
	// encoding/json's bytes without its reflection (event.AppendJSON); an
	// event AppendJSON refuses gets encoding/json's error.
	line, ok := ev.AppendJSON(w.line[:0])
	if !ok {
		w.scratch.Reset()
		if err := w.enc.Encode(ev); err != nil { // Encode appends the newline
			return err
		}
		return w.q.push(w.scratch.Bytes(), false)
	}
	w.line = append(line, '\n') // kept for the next event: push copies it
	return w.q.push(w.line, false)
}

// WriteJSON queues any value as one JSON line (the proc records of a
// recorded stream); it is dropped like an event when the queue is full.
func (w *Writer) WriteJSON(v any) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scratch.Reset()
	if err := w.enc.Encode(v); err != nil {
		return err
	}
	return w.q.push(w.scratch.Bytes(), false)
}

// Dropped returns how many lines were dropped because the destination did
// not keep up.
func (w *Writer) Dropped() uint64 { return w.q.dropped.Load() }

// Flush writes out queued lines, waiting for the destination.
func (w *Writer) Flush() error { return w.q.request(false, w.q.closeTimeout) }

// ReopenTimeout bounds how long Reopen waits for a stuck destination; the
// reopen still happens once the destination takes the queued lines.
const ReopenTimeout = 5 * time.Second

// Reopen writes out queued lines to the current file, then opens its path
// anew and closes the old one: after logrotate renamed it, new lines go to
// a new file at the original path. It does nothing for a Writer not made
// by OpenFile.
func (w *Writer) Reopen() error { return w.q.request(true, ReopenTimeout) }

// Close writes out queued lines (waiting at most Options.CloseTimeout),
// stops the drain and closes an owned file. It is idempotent.
func (w *Writer) Close() error { return w.q.close(w.q.closeTimeout) }

// CloseWithin is Close waiting at most d (a daemon's remaining time to
// exit), or Options.CloseTimeout if that is shorter.
func (w *Writer) CloseWithin(d time.Duration) error {
	if w.q.closeTimeout > 0 && w.q.closeTimeout < d {
		d = w.q.closeTimeout
	}
	return w.q.close(max(d, time.Millisecond))
}
