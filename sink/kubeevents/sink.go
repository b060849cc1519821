package kubeevents

import (
	"context"
	"errors"
	"sync"
	"time"

	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
)

// sink sits between the broadcaster and the API: it makes the node the
// reportingInstance (the broadcaster's recorder names the host) and
// reports every call's outcome.
type sink struct {
	inner  events.EventSink
	node   string
	calls  *calls
	result func(err error)
}

func (s *sink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	ev.ReportingInstance = s.node
	s.calls.begin()
	out, err := s.inner.Create(ctx, ev)
	s.done(ev, err)
	return out, err
}

func (s *sink) Update(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	ev.ReportingInstance = s.node
	s.calls.begin()
	out, err := s.inner.Update(ctx, ev)
	s.done(ev, err)
	return out, err
}

func (s *sink) Patch(ctx context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	s.calls.begin()
	out, err := s.inner.Patch(ctx, ev, data)
	s.done(ev, err)
	return out, err
}

func (s *sink) done(ev *eventsv1.Event, err error) {
	s.calls.end(ev.Namespace+"/"+ev.Name, err != nil && retried(err, ev.Series != nil))
	s.result(err)
}

// retryHorizon: the broadcaster retries an Event 12 times, 10 s apart;
// one that failed longer ago than this has been given up.
const retryHorizon = 3 * time.Minute

// calls tracks the sink's API calls for Close: how many are running, the
// Events whose last try failed and that the broadcaster will retry, and
// when anything last happened.
type calls struct {
	mu       sync.Mutex
	running  int
	retrying map[string]time.Time // namespace/name → when its last try failed
	last     time.Time
}

func newCalls() *calls { return &calls{retrying: map[string]time.Time{}} }

// touch: an Event was handed to the broadcaster.
func (c *calls) touch() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = time.Now()
}

func (c *calls) begin() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running++
	c.last = time.Now()
}

// end records a call's outcome for the Event key: to be retried (the
// server could not be reached) or not (sent, or given up).
func (c *calls) end(key string, retry bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	c.running--
	c.last = now
	if !retry {
		delete(c.retrying, key)
		return
	}
	c.retrying[key] = now
	for k, t := range c.retrying { // bounded: given-up Events go
		if now.Sub(t) > retryHorizon {
			delete(c.retrying, k)
		}
	}
}

// settled: no call is running and nothing happened for quiet.
func (c *calls) settled(now time.Time, quiet time.Duration) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running == 0 && now.Sub(c.last) >= quiet
}

// unsent is the Events not sent: calls still running, and Events waiting
// for a retry.
func (c *calls) unsent() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running + len(c.retrying)
}

// retried tells whether the broadcaster tries an Event again after err
// (as client-go's tools/events decides: not after the server rejected it,
// unless a series' Event already exists, nor when the request could not
// be built).
func retried(err error, series bool) bool {
	var construct *rest.RequestConstructionError
	if errors.As(err, &construct) {
		return false
	}
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		return series && apierrors.IsAlreadyExists(err)
	}
	return true
}

// outage tells when the API server stops and starts taking events, so
// that each outage is logged once, not once per retry.
type outage struct {
	mu   sync.Mutex
	down bool
}

// change records a call's outcome and reports whether the state changed
// (up to down, or down to up).
func (o *outage) change(failed bool) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.down == failed {
		return false
	}
	o.down = failed
	return true
}
