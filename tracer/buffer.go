package tracer

import (
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/perf"
	"github.com/cilium/ebpf/ringbuf"
)

// Buffer is how records travel from the kernel to the reader.
type Buffer int

const (
	// BufferAuto picks the ring buffer when the kernel has one (5.8+),
	// else a perf event array.
	BufferAuto Buffer = iota
	// BufferRingbuf is the BPF ring buffer: one buffer for all CPUs, in
	// the order records were queued (reserved, or copied out packed).
	BufferRingbuf
	// BufferPerf is a perf event array: one buffer per CPU, each in order,
	// with no order between CPUs.
	BufferPerf
)

var bufferNames = [...]string{BufferAuto: "auto", BufferRingbuf: "ringbuf", BufferPerf: "perf"}

func (b Buffer) String() string {
	if b >= 0 && int(b) < len(bufferNames) {
		return bufferNames[b]
	}
	return fmt.Sprintf("buffer(%d)", int(b))
}

// ParseBuffer parses auto, ringbuf or perf.
func ParseBuffer(s string) (Buffer, error) {
	for b, name := range bufferNames {
		if s == name {
			return Buffer(b), nil
		}
	}
	return BufferAuto, fmt.Errorf("unknown buffer %q: want auto, ringbuf or perf", s)
}

// What a reader returns once it was closed, and after a flush once it
// returned everything queued before.
var (
	errReaderClosed  = errors.New("reader closed")
	errReaderFlushed = errors.New("reader flushed")
)

// record is one read from either buffer. A perf record may carry only a
// count of samples the kernel dropped, and no sample.
type record struct {
	sample      []byte
	lostSamples uint64
}

// reader is the ring buffer or the perf event array, seen the same way by
// Run. readInto returns os.ErrDeadlineExceeded once the deadline passed and
// nothing is left, errReaderFlushed once it returned what was queued
// before a flush, and errReaderClosed after close, which may be called
// more than once and from another goroutine (it interrupts readInto).
type reader interface {
	readInto(*record) error
	setDeadline(time.Time)
	flush() error
	close() error
}

func newReader(events *ebpf.Map, buf Buffer, bytes int) (reader, error) {
	if buf == BufferPerf {
		rd, err := perf.NewReader(events, perfBufferBytes(bytes, int(events.MaxEntries())))
		if err != nil {
			return nil, fmt.Errorf("open perf event array reader: %w", err)
		}
		return &perfReader{rd: rd}, nil
	}
	rd, err := ringbuf.NewReader(events)
	if err != nil {
		return nil, fmt.Errorf("open ring buffer reader: %w", err)
	}
	return &ringReader{rd: rd}, nil
}

// perfBufferBytes splits the configured total over the CPUs, so --ringbuf-size
// bounds the memory either way; each CPU gets at least one page (the perf
// reader rounds up to a power-of-two number of pages).
func perfBufferBytes(total, cpus int) int {
	if cpus < 1 {
		cpus = 1
	}
	return max(total/cpus, os.Getpagesize())
}

// pollDeadline is the deadline to give either reader so that it returns
// at t or just after it, never before: their poller passes epoll the time
// left in whole milliseconds, rounded down, so a deadline less than a
// millisecond away polled without waiting, over and over until it passed
// (tens of thousands of wakeups a second on an idle node). Zero stays zero
// (no deadline).
func pollDeadline(t time.Time) time.Time {
	if t.IsZero() {
		return t
	}
	return t.Add(time.Millisecond)
}

type ringReader struct {
	rd  *ringbuf.Reader
	rec ringbuf.Record
}

func (r *ringReader) readInto(rec *record) error {
	if err := r.rd.ReadInto(&r.rec); err != nil {
		switch {
		case errors.Is(err, ringbuf.ErrClosed):
			return errReaderClosed
		case errors.Is(err, ringbuf.ErrFlushed):
			return errReaderFlushed
		}
		return err
	}
	rec.sample, rec.lostSamples = r.rec.RawSample, 0
	return nil
}

func (r *ringReader) setDeadline(t time.Time) { r.rd.SetDeadline(pollDeadline(t)) }
func (r *ringReader) flush() error            { return r.rd.Flush() }
func (r *ringReader) close() error            { return r.rd.Close() }

type perfReader struct {
	rd  *perf.Reader
	rec perf.Record
}

func (r *perfReader) readInto(rec *record) error {
	if err := r.rd.ReadInto(&r.rec); err != nil {
		switch {
		case errors.Is(err, perf.ErrClosed):
			return errReaderClosed
		case errors.Is(err, perf.ErrFlushed):
			return errReaderFlushed
		}
		return err
	}
	rec.sample, rec.lostSamples = r.rec.RawSample, r.rec.LostSamples
	return nil
}

func (r *perfReader) setDeadline(t time.Time) { r.rd.SetDeadline(pollDeadline(t)) }
func (r *perfReader) flush() error            { return r.rd.Flush() }
func (r *perfReader) close() error            { return r.rd.Close() }
