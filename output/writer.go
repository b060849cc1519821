package output

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
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
)

// ParseFormat parses "json" or "text".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "json":
		return JSON, nil
	case "text":
		return Text, nil
	}
	return 0, fmt.Errorf("unknown format %q: want json or text", s)
}

func (f Format) String() string {
	switch f {
	case JSON:
		return "json"
	case Text:
		return "text"
	}
	return fmt.Sprintf("format(%d)", int(f))
}

// FlushInterval bounds how long a written event may sit in the buffer.
const FlushInterval = 100 * time.Millisecond

// Writer writes events in one format. It is safe for concurrent use.
type Writer struct {
	mu     sync.Mutex
	buf    *bufio.Writer
	enc    *json.Encoder
	format Format
	closer io.Closer // closed by Close when the Writer owns the file
	err    error     // first write error; later writes return it

	stop chan struct{}
	done chan struct{}
}

// NewWriter returns a Writer on w. If w is an io.Closer that the Writer
// should own (a record file), pass it as owned; Close then closes it.
func NewWriter(w io.Writer, format Format, owned io.Closer) *Writer {
	buf := bufio.NewWriterSize(w, 64<<10)
	wr := &Writer{
		buf:    buf,
		enc:    json.NewEncoder(buf),
		format: format,
		closer: owned,
		stop:   make(chan struct{}),
		done:   make(chan struct{}),
	}
	wr.enc.SetEscapeHTML(false)
	go wr.flushLoop()
	return wr
}

// Write appends one event line.
func (w *Writer) Write(ev *event.Event) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	switch w.format {
	case JSON:
		w.err = w.enc.Encode(ev) // Encode appends the newline
	default:
		if _, err := w.buf.WriteString(ev.Text()); err != nil {
			w.err = err
		} else {
			w.err = w.buf.WriteByte('\n')
		}
	}
	return w.err
}

// Flush writes out buffered lines.
func (w *Writer) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err == nil {
		w.err = w.buf.Flush()
	}
	return w.err
}

func (w *Writer) flushLoop() {
	defer close(w.done)
	tick := time.NewTicker(FlushInterval)
	defer tick.Stop()
	for {
		select {
		case <-w.stop:
			return
		case <-tick.C:
			_ = w.Flush()
		}
	}
}

// Close flushes, stops the flush timer and closes an owned file. It is
// idempotent.
func (w *Writer) Close() error {
	w.mu.Lock()
	select {
	case <-w.stop:
		w.mu.Unlock()
		return w.err
	default:
		close(w.stop)
	}
	w.mu.Unlock()
	<-w.done
	err := w.Flush()
	if w.closer != nil {
		if cerr := w.closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}
