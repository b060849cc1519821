package tracer

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"go.uber.org/zap"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/logkey"
)

// DefaultRingBufferBytes is the ring buffer size when Config leaves it zero.
const DefaultRingBufferBytes = 8 << 20

// Config configures a Tracer.
type Config struct {
	// Sink receives every decoded event, on the goroutine that calls Run,
	// in ring-buffer order. Required.
	Sink func(*event.Event)
	// RingBufferBytes is the ring buffer size: a power of two and a
	// multiple of the page size. Zero means DefaultRingBufferBytes.
	RingBufferBytes int
	// LostCheckInterval is how often Run checks the kernel's lost-event
	// counters and warns when they grew. Zero means 5s.
	LostCheckInterval time.Duration
}

// Stats counts what the tracer saw.
type Stats struct {
	Received     uint64                // records read from the ring buffer
	DecodeErrors uint64                // records that did not decode
	Lost         map[event.Kind]uint64 // reservations that failed in the kernel
	LostTotal    uint64
}

// Tracer owns the loaded programs, their links and the ring-buffer reader.
type Tracer struct {
	log    *zap.Logger
	cfg    Config
	objs   *objects
	links  []link.Link
	reader *ringbuf.Reader
	clock  event.WallClock

	received     atomic.Uint64
	decodeErrors atomic.Uint64

	closeOnce sync.Once
	closeErr  error
}

// New checks the kernel, loads and attaches every program, and opens the
// ring buffer. Nothing is read until Run.
func New(cfg Config, log *zap.Logger) (*Tracer, error) {
	if cfg.Sink == nil {
		return nil, errors.New("tracer: Config.Sink is nil")
	}
	if cfg.RingBufferBytes == 0 {
		cfg.RingBufferBytes = DefaultRingBufferBytes
	}
	if n := cfg.RingBufferBytes; n < 4096 || n&(n-1) != 0 {
		return nil, fmt.Errorf("ring buffer size %d: want a power of two of at least 4096 bytes", n)
	}
	if cfg.LostCheckInterval == 0 {
		cfg.LostCheckInterval = 5 * time.Second
	}
	if err := preflight(log); err != nil {
		return nil, err
	}
	clock, err := wallClock()
	if err != nil {
		return nil, fmt.Errorf("read CLOCK_MONOTONIC: %w", err)
	}
	start := time.Now()
	objs, err := loadObjects(cfg.RingBufferBytes, log)
	if err != nil {
		return nil, err
	}
	t := &Tracer{log: log, cfg: cfg, objs: objs, clock: clock}
	for _, ap := range objs.attachPoints() {
		l, err := attach(ap)
		if err != nil {
			t.Close()
			return nil, err
		}
		t.links = append(t.links, l)
	}
	t.reader, err = ringbuf.NewReader(objs.mount.Events)
	if err != nil {
		t.Close()
		return nil, fmt.Errorf("open ring buffer reader: %w", err)
	}
	log.Info("BPF programs attached",
		zap.Int(logkey.Attached, len(t.links)),
		zap.Int(logkey.RingBufBytes, cfg.RingBufferBytes),
		zap.Duration(logkey.Elapsed, time.Since(start)))
	return t, nil
}

// Run reads events until ctx is done (then it closes the reader and returns
// nil) or reading fails. It is meant to be called once.
func (t *Tracer) Run(ctx context.Context) error {
	stop := context.AfterFunc(ctx, func() { t.reader.Close() })
	defer stop()

	done := make(chan struct{})
	defer close(done)
	go t.watchLost(done)

	var rec ringbuf.Record
	for {
		if err := t.reader.ReadInto(&rec); err != nil {
			if errors.Is(err, ringbuf.ErrClosed) {
				return nil
			}
			return fmt.Errorf("read ring buffer: %w", err)
		}
		t.received.Add(1)
		ev, err := event.Decode(rec.RawSample)
		if err != nil {
			if t.decodeErrors.Add(1) == 1 {
				t.log.Warn("dropping an undecodable record (further ones are only counted)", zap.Error(err))
			}
			continue
		}
		ev.Time = t.clock.Time(ev.MonoNS)
		t.cfg.Sink(&ev)
	}
}

// watchLost warns whenever the kernel-side lost counters grow, so a loss is
// never silent even if nobody reads Stats.
func (t *Tracer) watchLost(done <-chan struct{}) {
	tick := time.NewTicker(t.cfg.LostCheckInterval)
	defer tick.Stop()
	var last uint64
	for {
		select {
		case <-done:
			return
		case <-tick.C:
		}
		st, err := t.Stats()
		if err != nil {
			continue
		}
		if st.LostTotal > last {
			fields := []zap.Field{zap.Uint64(logkey.Lost, st.LostTotal-last), zap.Uint64(logkey.LostTotal, st.LostTotal)}
			for k, n := range st.Lost {
				fields = append(fields, zap.Uint64(logkey.Lost+"_"+k.String(), n))
			}
			t.log.Warn("events lost: the ring buffer was full", fields...)
			last = st.LostTotal
		}
	}
}

// Stats returns the counters so far.
func (t *Tracer) Stats() (Stats, error) {
	st := Stats{
		Received:     t.received.Load(),
		DecodeErrors: t.decodeErrors.Load(),
		Lost:         map[event.Kind]uint64{},
	}
	var perCPU []uint64
	for _, k := range event.KernelKinds() {
		key := uint32(k)
		if err := t.objs.mount.Lost.Lookup(&key, &perCPU); err != nil {
			return st, fmt.Errorf("read lost counter for %s: %w", k, err)
		}
		var sum uint64
		for _, n := range perCPU {
			sum += n
		}
		if sum > 0 {
			st.Lost[k] = sum
			st.LostTotal += sum
		}
	}
	return st, nil
}

// Close detaches every program and frees the maps. It is safe to call more
// than once and concurrently with Run, which then returns.
func (t *Tracer) Close() error {
	t.closeOnce.Do(func() {
		var errs []error
		if t.reader != nil {
			errs = append(errs, t.reader.Close())
		}
		for _, l := range t.links {
			errs = append(errs, l.Close())
		}
		t.objs.close()
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}
