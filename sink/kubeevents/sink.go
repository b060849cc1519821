package kubeevents

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/mntleak/mntleak/internal/kubeclient"
)

// EventAPI is the part of the API server the Poster calls
// (*kubeclient.Client).
type EventAPI interface {
	CreateEvent(ctx context.Context, ev *kubeclient.Event) (*kubeclient.Event, error)
	PatchEventSeries(ctx context.Context, namespace, name string, s kubeclient.EventSeries) (*kubeclient.Event, error)
}

// sink sits between the Poster and the API: it makes the node the
// reportingInstance and reports every call's outcome.
type sink struct {
	api    EventAPI
	node   string
	calls  *calls
	result func(err error)
}

// record sends ev once: a patch of its series when it has one (a create
// when the server no longer has it), else a create. It returns whether
// the Event is to be tried again (as client-go's tools/events decides).
func (s *sink) record(ctx context.Context, ev *kubeclient.Event) (retry bool) {
	ev.ReportingInstance = s.node
	key := ev.Metadata.Namespace + "/" + ev.Metadata.Name
	s.calls.begin()
	var err error
	series := ev.Series != nil
	if series {
		_, err = s.api.PatchEventSeries(ctx, ev.Metadata.Namespace, ev.Metadata.Name, *ev.Series)
	}
	if !series || kubeclient.IsNotFound(err) {
		_, err = s.api.CreateEvent(ctx, ev)
	}
	retry = err != nil && retried(err, series)
	s.calls.end(key, retry)
	s.result(err)
	return retry
}

// retryHorizon: an Event is tried maxTries times, retryWait apart; one
// that failed longer ago than this has been given up.
const retryHorizon = 3 * time.Minute

// calls tracks the sink's API calls for Close: how many are running, the
// Events whose last try failed and that will be retried, and when
// anything last happened.
type calls struct {
	mu       sync.Mutex
	running  int
	retrying map[string]time.Time // namespace/name → when its last try failed
	last     time.Time
}

func newCalls() *calls { return &calls{retrying: map[string]time.Time{}} }

// touch: an Event was posted.
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

// retried tells whether an Event is tried again after err, as client-go's
// tools/events decides: not after the server rejected it (a Status),
// unless a series' Event already exists; yes when the server could not be
// reached or answered something else.
func retried(err error, series bool) bool {
	var status *kubeclient.StatusError
	if errors.As(err, &status) {
		return series && kubeclient.IsAlreadyExists(err)
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
