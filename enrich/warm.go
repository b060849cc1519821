package enrich

import (
	"context"
	"sync"
	"time"

	"github.com/mntleak/mntleak/attribution"
)

// Warmer asks about the container and pod an event's process runs in soon
// after the event arrives, off the event path, so that the answer is in
// the resolver's cache (kept until evicted: an id never names another
// object) when a finding names that process: also once the pod has been
// deleted from the API server and its containers from the runtime (a
// Bidirectional sidecar that mounted into another pod's volume and was
// deleted before that pod's teardown failed).
//
// It asks the resolver itself, never through the recorder: a finding's
// own question is recorded when Fill asks it, answered from the cache, so
// a replay reads the answer the finding had.
type Warmer struct {
	lookup  attribution.Lookup
	timeout time.Duration
	in      chan warmKey
	ctx     context.Context // canceled by Close
	cancel  context.CancelFunc
	done    chan struct{}

	mu sync.Mutex // Warm (event path) against the goroutine and Close
	// asked holds the questions queued or answered (zero), and those that
	// failed, with when they may be asked again (after retry): a runtime
	// that is not there is not asked at every event of the node.
	asked   map[warmKey]time.Time
	retry   time.Duration
	now     func() time.Time
	maxKeys int
	dropped uint64
	started bool
	closed  bool
}

// warmKey is one question: a container id, or a pod UID when the cgroup
// named no container.
type warmKey struct{ container, pod string }

// NewWarmer returns a Warmer asking lookup (each question under timeout),
// with at most queue questions waiting. Call Start.
func NewWarmer(lookup attribution.Lookup, timeout time.Duration, queue int) *Warmer {
	if timeout <= 0 {
		timeout = 2 * time.Second
	}
	if queue <= 0 {
		queue = 256
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Warmer{lookup: lookup, timeout: timeout, in: make(chan warmKey, queue), ctx: ctx, cancel: cancel,
		done: make(chan struct{}), asked: map[warmKey]time.Time{}, maxKeys: 4096, retry: warmRetry, now: time.Now}
}

// warmRetry is how long a question that failed (the runtime or the API
// server did not answer, or did not know the id) waits before it is asked
// again: the resolver's negative TTL.
const warmRetry = 30 * time.Second

// Start runs the goroutine that asks the queued questions.
func (w *Warmer) Start() {
	w.mu.Lock()
	w.started = true
	w.mu.Unlock()
	go func() {
		defer close(w.done)
		for k := range w.in {
			if w.ctx.Err() != nil {
				continue // closed: what is queued is dropped
			}
			ctx, cancel := context.WithTimeout(w.ctx, w.timeout)
			var err error
			if k.container != "" {
				_, err = w.lookup.Container(ctx, k.container)
			} else {
				_, err = w.lookup.Pod(ctx, k.pod)
			}
			cancel()
			if err != nil {
				// Asked again at its first event after retry (the resolver
				// remembers the miss for its negative TTL meanwhile).
				w.mu.Lock()
				if _, kept := w.asked[k]; kept {
					w.asked[k] = w.now().Add(w.retry)
				}
				w.mu.Unlock()
			}
		}
	}()
}

// Warm queues the question about a container (else a pod), once per id
// (a failed one again at its first event after warmRetry); it never
// waits: with the queue full the question is dropped (counted) and asked
// at the id's next event.
func (w *Warmer) Warm(container, podUID string) {
	k := warmKey{container: container}
	if container == "" {
		k.pod = podUID
	}
	if k == (warmKey{}) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.closed {
		return
	}
	if again, ok := w.asked[k]; ok && (again.IsZero() || w.now().Before(again)) {
		return
	}
	if len(w.asked) >= w.maxKeys {
		clear(w.asked) // the resolver's cache answers those again at once
	}
	select {
	case w.in <- k:
		w.asked[k] = time.Time{}
	default:
		w.dropped++
	}
}

// Dropped is how many questions a full queue dropped.
func (w *Warmer) Dropped() uint64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.dropped
}

// Close stops taking questions, cancels the one being asked and drops the
// queued ones (at exit no finding will name those processes), and waits
// for the goroutine to end. Safe to call twice.
func (w *Warmer) Close() {
	w.mu.Lock()
	if w.closed {
		w.mu.Unlock()
		return
	}
	w.closed = true
	close(w.in)
	started := w.started
	w.mu.Unlock()
	w.cancel()
	if started {
		<-w.done
	}
}
