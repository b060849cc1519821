package output

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultQueueBytes is a queue's capacity when Options leave it zero: at
// ~300 bytes a line, some 14000 events, a few seconds of a mount storm.
const DefaultQueueBytes = 4 << 20

// wakeBytes is how much pending output wakes the drain before its timer:
// one write(2) per batch of this size during a storm.
const wakeBytes = 64 << 10

// ErrCloseTimeout is returned by Close when the destination did not take
// the pending lines in time (a stuck pipe): they are abandoned, since a
// daemon asked to stop must stop.
var ErrCloseTimeout = errors.New("output not flushed in time")

// queue holds complete lines for a destination and writes them from a
// goroutine of its own, so that whoever produces lines (the ring-buffer
// reader) never waits for a slow or stuck destination. Its capacity is in
// bytes; a line that does not fit is dropped and counted, and the next line
// that fits is preceded by a marker line saying how many were dropped, so
// the gap is in the stream itself.
type queue struct {
	max       int
	forcedMax int // forced lines are dropped past this (0: never)
	marker    func(n uint64, since time.Time) []byte

	mu           sync.Mutex
	pending      *bytes.Buffer
	spare        *bytes.Buffer // written by the drain, outside mu
	gap          uint64        // lines dropped since the last marker
	gapSince     time.Time
	err          error // first error of the destination; sticky
	dst          io.Writer
	closer       io.Closer
	open         func() (io.Writer, io.Closer, error) // reopens the destination, nil for none
	stopped      bool
	closeTimeout time.Duration // for Flush and Close; 0 waits for ever
	dropped      atomic.Uint64
	writtenAt    atomic.Int64 // unix nanoseconds of the last successful write

	wake chan struct{}
	reqs chan request
	stop chan struct{}
	done chan struct{}
}

type request struct {
	reopen bool
	reply  chan error
}

func newQueue(dst io.Writer, closer io.Closer, max int, marker func(uint64, time.Time) []byte,
	open func() (io.Writer, io.Closer, error)) *queue {
	q := makeQueue(dst, closer, max, marker, open)
	go q.drain(FlushInterval)
	return q
}

// makeQueue is newQueue without its drain, which the caller starts.
func makeQueue(dst io.Writer, closer io.Closer, max int, marker func(uint64, time.Time) []byte,
	open func() (io.Writer, io.Closer, error)) *queue {
	if max <= 0 {
		max = DefaultQueueBytes
	}
	q := &queue{
		max: max, marker: marker, dst: dst, closer: closer, open: open,
		pending: &bytes.Buffer{}, spare: &bytes.Buffer{},
		wake: make(chan struct{}, 1), reqs: make(chan request), stop: make(chan struct{}), done: make(chan struct{}),
	}
	return q
}

// push queues one complete line (copied). It never blocks on the
// destination. force queues it over the capacity, up to forcedMax: for the
// rare lines that must not be dropped (findings). It returns the
// destination's error, if it failed.
func (q *queue) push(line []byte, force bool) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	if q.err != nil {
		return q.err
	}
	if q.stopped {
		return errors.New("output closed")
	}
	var mark []byte
	if q.gap > 0 {
		mark = q.marker(q.gap, q.gapSince)
	}
	// An empty queue takes any line, however long (a big /proc snapshot).
	size := q.pending.Len() + len(mark) + len(line)
	fits := q.pending.Len() == 0 || size <= q.max || (force && (q.forcedMax == 0 || size <= q.forcedMax))
	if !fits {
		if q.gap == 0 {
			q.gapSince = time.Now()
		}
		q.gap++
		q.dropped.Add(1)
		return nil
	}
	if mark != nil {
		q.pending.Write(mark)
		q.gap = 0
	}
	q.pending.Write(line)
	// A finding goes out at once: someone may be waiting for it (an
	// operator, the journal); events wait for the timer or a full batch.
	if q.pending.Len() >= wakeBytes || force {
		q.wakeDrain()
	}
	return nil
}

// wakeDrain has the drain write out what is pending now, not at its next
// tick, without waiting for it.
func (q *queue) wakeDrain() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// drain writes out what is pending when woken, asked, stopped, and every
// tick of every.
func (q *queue) drain(every time.Duration) {
	defer close(q.done)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		select {
		case <-q.wake:
			q.writeOut()
		case <-tick.C:
			q.writeOut()
		case r := <-q.reqs:
			err := q.writeOut()
			if r.reopen {
				err = q.reopen()
			}
			r.reply <- err
		case <-q.stop:
			q.writeOut()
			return
		}
	}
}

// writeOut writes what is pending; only the drain goroutine calls it.
func (q *queue) writeOut() error {
	q.mu.Lock()
	if q.err != nil || q.pending.Len() == 0 {
		err := q.err
		q.mu.Unlock()
		return err
	}
	q.pending, q.spare = q.spare, q.pending
	dst := q.dst
	q.mu.Unlock()

	_, err := dst.Write(q.spare.Bytes())
	q.spare.Reset()
	if err != nil {
		q.mu.Lock()
		q.err = err
		q.pending.Reset()
		q.mu.Unlock()
		return err
	}
	q.writtenAt.Store(time.Now().UnixNano())
	return nil
}

// reopen opens the destination anew (logrotate moved the file away) and
// closes the old one; if the new one cannot be opened the old one stays.
func (q *queue) reopen() error {
	if q.open == nil {
		return nil
	}
	dst, closer, err := q.open()
	if err != nil {
		return err
	}
	q.mu.Lock()
	old := q.closer
	q.dst, q.closer = dst, closer
	q.mu.Unlock()
	if old != nil {
		return old.Close()
	}
	return nil
}

// request asks the drain to write out (and maybe reopen), waiting at most
// timeout (0: no limit).
func (q *queue) request(reopen bool, timeout time.Duration) error {
	r := request{reopen: reopen, reply: make(chan error, 1)}
	var expire <-chan time.Time
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		expire = t.C
	}
	select {
	case q.reqs <- r:
	case <-q.done:
		return q.sticky()
	case <-expire:
		return fmt.Errorf("%w: %d bytes pending", ErrCloseTimeout, q.pendingBytes())
	}
	select {
	case err := <-r.reply:
		return err
	case <-expire:
		return fmt.Errorf("%w: %d bytes pending", ErrCloseTimeout, q.pendingBytes())
	}
}

// close stops the drain after it wrote what is pending, waiting at most
// timeout (0: no limit), and closes the destination if it is owned.
func (q *queue) close(timeout time.Duration) error {
	q.mu.Lock()
	if q.stopped {
		q.mu.Unlock()
		return q.sticky()
	}
	q.stopped = true
	q.mu.Unlock()
	close(q.stop)
	if timeout > 0 {
		t := time.NewTimer(timeout)
		defer t.Stop()
		select {
		case <-q.done:
		case <-t.C:
			// The drain is stuck in a write; leave it (and the file) to the
			// process's exit.
			return fmt.Errorf("%w: %d bytes pending", ErrCloseTimeout, q.pendingBytes())
		}
	} else {
		<-q.done
	}
	err := q.sticky()
	q.mu.Lock()
	closer := q.closer
	q.mu.Unlock()
	if closer != nil {
		if cerr := closer.Close(); err == nil {
			err = cerr
		}
	}
	return err
}

func (q *queue) sticky() error {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.err
}

func (q *queue) pendingBytes() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.pending.Len()
}
