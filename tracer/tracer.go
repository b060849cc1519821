package tracer

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/link"
	"go.uber.org/zap"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/logkey"
)

// DefaultRingBufferBytes is the ring buffer size when Config leaves it
// zero. Records with paths go out packed (bpf/mntleak.h), a mount storm's
// at 150-odd bytes, so 2 MiB holds over 10,000 of them, more than the
// 8 MiB of whole records it replaced (6,600 mounts); the kernel maps the
// data area twice, so its size counts twice in the daemon's RSS.
const DefaultRingBufferBytes = 2 << 20

// drainTimeout bounds how long Run, once ctx is done, goes on delivering
// the records queued before the programs were detached.
const drainTimeout = 500 * time.Millisecond

// Config configures a Tracer.
type Config struct {
	// Sink receives every decoded event, and the KindLost events the
	// tracer makes, on the goroutine that calls Run, in buffer order. With
	// a perf buffer (in order per CPU only) events are held for
	// PerfReorderWindow and released in kernel time order. The sink may
	// keep the pointer.
	Sink func(*event.Event)
	// Buffer picks the ring buffer or a perf event array; zero is auto.
	Buffer Buffer
	// Hooks picks the sys_exit tracepoint or the syscall functions' BPF
	// trampolines; zero is auto (trampolines where the kernel has them).
	Hooks Hooks
	// RingBufferBytes is the ring buffer size: a power of two and a
	// multiple of the page size. Zero means DefaultRingBufferBytes. A perf
	// buffer gets the same total, split over the CPUs.
	RingBufferBytes int
	// LostCheckInterval is the longest time between two reads of the
	// kernel's lost-event counters while Run runs (each failure event is
	// also preceded by one). Zero means DefaultLostCheckInterval.
	LostCheckInterval time.Duration
	// LostWarnInterval is the shortest time between two warnings about
	// lost events. Zero means DefaultLostWarnInterval.
	LostWarnInterval time.Duration
	// PerfReorderWindow is how long, after its kernel timestamp, a perf
	// buffer's event is held so that earlier events from other CPUs can
	// overtake it: the latency the perf buffer adds. Zero means
	// DefaultPerfReorderWindow; negative turns the reordering off. The
	// ring buffer, in order already, never waits.
	PerfReorderWindow time.Duration
	// PerfReorderMax bounds the events held (each 0.5 KB plus its
	// strings: the default holds at most some 10 MB); past it the oldest
	// go first. Zero means DefaultPerfReorderMax.
	PerfReorderMax int

	// Test hooks (export_test.go): another BTF file, handlers on top of the
	// real ones, no periodic lost check (only the one before each failure
	// event and the last one), and the path walk of kernels without
	// bpf_loop.
	btfPath         string
	extraHandlers   func(*objects) []handler
	noPeriodicCheck bool
	boundedWalk     bool          // the bounded path walk even when bpf_loop exists
	taskMapEntries  uint32        // task_mntns_map's bound (0: TASK_MNTNS_MAX)
	clockSkew       time.Duration // added to the wall clock's offset (as if NTP moved it since the start)
	noQuietWake     bool          // quiet exits wait for a record that wakes the reader
	noLostWakeup    bool          // no periodic lost check, nor a reader wakeup for it
}

// Stats counts what the tracer saw.
type Stats struct {
	Buffer       Buffer                // the buffer in use: ringbuf or perf
	Received     uint64                // records read from the buffer
	DecodeErrors uint64                // records that did not decode
	Lost         map[event.Kind]uint64 // records the kernel could not queue
	LostTotal    uint64
	// PerfLostSamples is the perf buffer's own count of the same drops,
	// reported late (with the next record of that CPU). LostTotal already
	// includes them: every one is also a failed bpf_perf_event_output,
	// which the programs count by kind.
	PerfLostSamples uint64
	// PerfReorderLate counts perf events that arrived after a later event
	// had been released (more than PerfReorderWindow late): they reached
	// the sink out of order. PerfReorderForced counts events released
	// before their window ended because PerfReorderMax were held.
	PerfReorderLate   uint64
	PerfReorderForced uint64
	// LostReadErrors counts checks that could not read the kernel's lost
	// counters (the first one is logged); a loss is then reported late.
	LostReadErrors uint64
	// Timeouts counts the reader's returns at its deadline with nothing
	// read: its own wakeups (the lost check, quiet exits, a perf reorder's
	// release), a few a second on an idle node.
	Timeouts uint64
}

// Tracer owns the loaded programs, their links and the buffer reader.
type Tracer struct {
	log    *zap.Logger
	cfg    Config
	buffer Buffer
	walk   PathWalk
	hooks  Hooks
	// hooksWhy says why hooks was chosen, for the log and Hooks.
	hooksWhy string
	objs     *objects
	links    []link.Link
	reader   reader
	clock    event.WallClock
	mono     monoClock
	// disabled lists the events whose optional syscalls are missing.
	disabled []string
	// kernelTypes is the kernel BTF while New loads and attaches; nil
	// after (its parsed types are megabytes the daemon does not need).
	kernelTypes *btf.Spec

	received       atomic.Uint64
	decodeErrors   atomic.Uint64
	perfLost       atomic.Uint64
	reorderLate    atomic.Uint64
	reorderForced  atomic.Uint64
	lostReadErrors atomic.Uint64
	timeouts       atomic.Uint64
	quietExits     atomic.Bool // SetQuietExits

	detachOnce sync.Once
	detachErr  error
	closeOnce  sync.Once
	closeErr   error
}

// New checks the kernel, loads every program, opens the buffer and
// attaches the programs. Nothing is read until Run.
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
	if cfg.LostCheckInterval <= 0 || cfg.LostCheckInterval > DefaultLostCheckInterval {
		cfg.LostCheckInterval = DefaultLostCheckInterval
	}
	if cfg.LostWarnInterval <= 0 {
		cfg.LostWarnInterval = DefaultLostWarnInterval
	}
	if cfg.PerfReorderWindow == 0 {
		cfg.PerfReorderWindow = DefaultPerfReorderWindow
	}
	if cfg.PerfReorderMax <= 0 {
		cfg.PerfReorderMax = DefaultPerfReorderMax
	}
	k, err := preflight(cfg, log)
	if err != nil {
		return nil, err
	}
	memlock, err := RemoveMemlock()
	if err != nil {
		return nil, err
	}
	mono, err := newMonoClock()
	if err != nil {
		return nil, fmt.Errorf("read CLOCK_MONOTONIC: %w", err)
	}
	clock := mono.wall()
	clock.OffsetNS += int64(cfg.clockSkew)
	start := time.Now()
	objs, err := loadObjects(loadOptions{buffer: k.buffer, ringBufBytes: cfg.RingBufferBytes, kernelTypes: k.btf, walk: k.walk, hooks: k.hooks,
		taskMapEntries: cfg.taskMapEntries}, log)
	if err != nil {
		return nil, err
	}
	t := &Tracer{log: log, cfg: cfg, buffer: k.buffer, walk: k.walk, hooks: k.hooks, hooksWhy: k.hooksWhy, objs: objs, clock: clock, mono: mono, kernelTypes: k.btf}
	// The reader before the programs: a perf output to a CPU whose buffer
	// is not open yet fails, and would count as lost.
	if t.reader, err = newReader(objs.mount.Events, k.buffer, cfg.RingBufferBytes); err != nil {
		t.Close()
		return nil, err
	}
	if err := t.attachAll(); err != nil {
		t.Close()
		return nil, err
	}
	t.kernelTypes = nil
	log.Info("BPF programs attached",
		zap.Int(logkey.Attached, len(t.links)),
		zap.Stringer(logkey.Buffer, k.buffer),
		zap.Stringer(logkey.PathWalk, k.walk),
		zap.Stringer(logkey.Hooks, k.hooks),
		zap.String(logkey.HooksWhy, k.hooksWhy),
		zap.Int(logkey.RingBufBytes, cfg.RingBufferBytes),
		zap.String(logkey.Memlock, string(memlock)),
		zap.Duration(logkey.Elapsed, time.Since(start)))
	return t, nil
}

// attachAll fills the dispatcher's handlers (on the trampoline path, only
// checks their syscalls), then attaches the programs. Handlers whose
// optional syscall the kernel lacks are left out, which disables their
// events with one warning for all of them.
func (t *Tracer) attachAll() error {
	handlers := t.objs.handlers()
	if t.cfg.extraHandlers != nil {
		handlers = append(handlers, t.cfg.extraHandlers(t.objs)...)
	}
	var missing []string
	for _, h := range handlers {
		var err error
		if t.hooks == HooksTrampoline {
			err = checkSyscall(h, t.kernelTypes)
		} else {
			err = install(t.objs.mount.Handlers, h, t.kernelTypes)
		}
		var me *missingError
		switch {
		case errors.As(err, &me) && h.optional:
			t.disabled = append(t.disabled, h.event)
			missing = append(missing, me.syscall)
			continue
		case errors.As(err, &me):
			return fmt.Errorf("%s events need %w", h.event, err)
		case err != nil:
			return err
		}
	}
	points := t.objs.attachPoints()
	if t.hooks == HooksTrampoline {
		points = t.objs.fexitPoints()
	}
	for _, a := range points {
		l, err := attach(a)
		if err != nil {
			return err
		}
		t.links = append(t.links, l)
	}
	if len(t.disabled) > 0 {
		t.log.Warn("syscalls missing from this kernel: their events are disabled",
			zap.Strings(logkey.Disabled, t.disabled), zap.Strings(logkey.Syscall, missing))
	}
	return nil
}

// Disabled lists the events that are not traced because the kernel lacks
// their (optional) syscalls.
func (t *Tracer) Disabled() []string { return append([]string(nil), t.disabled...) }

// Hooks is the path in use, HooksTracepoint or HooksTrampoline, and why
// it was chosen.
func (t *Tracer) Hooks() (Hooks, string) { return t.hooks, t.hooksWhy }

// Buffer is the buffer in use: BufferRingbuf or BufferPerf.
func (t *Tracer) Buffer() Buffer { return t.buffer }

// PathWalk is the path walk the loaded programs use.
func (t *Tracer) PathWalk() PathWalk { return t.walk }

// Run reads events until ctx is done (then it detaches the programs,
// delivers what they queued within drainTimeout, closes the reader and
// returns nil) or reading fails. It is meant to be called once.
func (t *Tracer) Run(ctx context.Context) error {
	done := make(chan struct{})
	defer close(done)
	stop := context.AfterFunc(ctx, func() {
		// The programs stop first: a perf buffer refuses records once its
		// reader is closed, and each would count as lost. Then Run
		// delivers what they queued, for at most drainTimeout, so that a
		// slow sink cannot hold up the shutdown.
		_ = t.detach()
		if t.reader.flush() == nil {
			select {
			case <-done:
				return
			case <-time.After(drainTimeout):
			}
		}
		_ = t.reader.close()
	})
	defer stop()
	defer t.reader.close()

	out := newOutput(t)
	defer out.flush()
	lost := newLostWatch(t, out.emit, time.Now())
	var (
		rec   record
		quiet time.Time // the reader's next wakeup for quiet exits
	)
	for {
		now := time.Now()
		lost.due(now)
		next := lost.next
		if t.cfg.noLostWakeup {
			next = time.Time{} // no deadline
		}
		if quiet = t.quietWake(now, quiet); !quiet.IsZero() && (next.IsZero() || quiet.Before(next)) {
			next = quiet
		}
		out.due(now, next)
		err := t.reader.readInto(&rec)
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			t.timeouts.Add(1)
			continue
		case errors.Is(err, errReaderFlushed), errors.Is(err, errReaderClosed):
			// What was lost up to here is in the stream too.
			lost.check(time.Now(), 0)
			return nil
		case err != nil:
			return fmt.Errorf("read %s buffer: %w", t.buffer, err)
		}
		if rec.lostSamples > 0 {
			t.perfLost.Add(rec.lostSamples)
		}
		if len(rec.sample) == 0 {
			continue
		}
		t.received.Add(1)
		ev, err := event.Decode(rec.sample)
		if err != nil {
			if t.decodeErrors.Add(1) == 1 {
				t.log.Warn("dropping an undecodable record (further ones are only counted)", zap.Error(err))
			}
			continue
		}
		ev.Time = t.clock.Time(ev.MonoNS)
		if ev.Kind == event.KindFailure {
			// A finding on this failure must know of any loss before it
			// (a reorder keeps it there by placing it at the same time).
			lost.check(time.Now(), out.at(ev.MonoNS))
		}
		out.emit(&ev)
	}
}

// Stats returns the counters so far.
func (t *Tracer) Stats() (Stats, error) {
	st := Stats{
		Buffer:            t.buffer,
		Received:          t.received.Load(),
		DecodeErrors:      t.decodeErrors.Load(),
		PerfLostSamples:   t.perfLost.Load(),
		PerfReorderLate:   t.reorderLate.Load(),
		PerfReorderForced: t.reorderForced.Load(),
		LostReadErrors:    t.lostReadErrors.Load(),
		Timeouts:          t.timeouts.Load(),
		Lost:              map[event.Kind]uint64{},
	}
	lost, total, err := t.lostCounts()
	if err != nil {
		return st, err
	}
	st.Lost, st.LostTotal = lost, total
	return st, nil
}

// Close detaches every program and frees the maps. It is safe to call more
// than once and concurrently with Run, which then returns.
func (t *Tracer) Close() error {
	t.closeOnce.Do(func() {
		var errs []error
		if t.reader != nil {
			errs = append(errs, t.reader.close())
		}
		errs = append(errs, t.detach())
		t.objs.close()
		t.closeErr = errors.Join(errs...)
	})
	return t.closeErr
}

// detach closes every link, once: on ctx.Done in Run, or in Close.
func (t *Tracer) detach() error {
	t.detachOnce.Do(func() {
		// Concurrently: each detach waits for an RCU grace period, and one
		// after another they took most of the 2s a SIGTERM allows.
		errs := make([]error, len(t.links))
		var wg sync.WaitGroup
		for i, l := range t.links {
			wg.Go(func() { errs[i] = l.Close() })
		}
		wg.Wait()
		t.detachErr = errors.Join(errs...)
	})
	return t.detachErr
}
