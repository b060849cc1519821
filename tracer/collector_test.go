package tracer_test

import (
	"context"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/tracer"
)

// collector runs a real tracer for one test and keeps every event.
type collector struct {
	tr     *tracer.Tracer
	mu     sync.Mutex
	events []event.Event
	added  chan struct{}
}

// envBuffer runs every test that uses startTracer with another buffer
// (MNTLEAK_TEST_BUFFER=perf), to exercise the perf fallback with all of them.
const envBuffer = "MNTLEAK_TEST_BUFFER"

// envHooks runs every test that uses startTracer on one path
// (MNTLEAK_TEST_HOOKS=tracepoint or trampoline; unset is auto), so that a
// kernel with trampolines runs them on both.
const envHooks = "MNTLEAK_TEST_HOOKS"

// startTracer loads and attaches the real programs; they are detached at
// cleanup, where the test also fails if any event was lost.
func startTracer(t *testing.T) *collector {
	t.Helper()
	buf, err := tracer.ParseBuffer(os.Getenv(envBuffer))
	if os.Getenv(envBuffer) == "" {
		buf, err = tracer.BufferAuto, nil
	}
	if err != nil {
		t.Fatalf("%s: %v", envBuffer, err)
	}
	hooks, err := tracer.ParseHooks(os.Getenv(envHooks))
	if os.Getenv(envHooks) == "" {
		hooks, err = tracer.HooksAuto, nil
	}
	if err != nil {
		t.Fatalf("%s: %v", envHooks, err)
	}
	return startTracerWith(t, tracer.Config{Buffer: buf, Hooks: hooks}, zaptest.NewLogger(t))
}

// startTracerWith is startTracer with cfg (its Sink is the collector's)
// and log.
func startTracerWith(t *testing.T, cfg tracer.Config, log *zap.Logger) *collector {
	t.Helper()
	privtest.Require(t)
	c := &collector{added: make(chan struct{}, 1)}
	cfg.Sink = c.add
	tr, err := tracer.New(cfg, log)
	if err != nil {
		t.Fatalf("tracer.New: %v", err)
	}
	c.tr = tr
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		st, err := tr.Stats()
		if err != nil {
			t.Errorf("Stats: %v", err)
		} else if st.LostTotal != 0 || st.DecodeErrors != 0 {
			t.Errorf("lost %d events, %d decode errors", st.LostTotal, st.DecodeErrors)
		}
		if err := tr.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if err := tr.Close(); err != nil {
			t.Errorf("second Close: %v", err)
		}
	})
	return c
}

func (c *collector) add(ev *event.Event) {
	c.mu.Lock()
	c.events = append(c.events, *ev)
	c.mu.Unlock()
	select {
	case c.added <- struct{}{}:
	default:
	}
}

// matching returns the events so far that satisfy match.
func (c *collector) matching(match func(*event.Event) bool) []event.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []event.Event
	for i := range c.events {
		if match(&c.events[i]) {
			out = append(out, c.events[i])
		}
	}
	return out
}

// waitFor returns the first event that satisfies match, failing after 10s.
func (c *collector) waitFor(t *testing.T, what string, match func(*event.Event) bool) event.Event {
	t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		if evs := c.matching(match); len(evs) > 0 {
			return evs[0]
		}
		select {
		case <-c.added:
		case <-deadline:
			t.Fatalf("no %s event within 10s", what)
		}
	}
}

// onThread runs f on one locked OS thread and returns that thread's id, so a
// test can match the tid in the events f causes.
func onThread(f func()) (tid int) {
	done := make(chan int)
	go func() {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
		f()
		done <- unix.Gettid()
	}()
	return <-done
}

func ownPID() uint32 { return uint32(os.Getpid()) }
