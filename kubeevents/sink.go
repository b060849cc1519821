package kubeevents

import (
	"context"
	"sync"

	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/tools/events"
)

// sink sits between the broadcaster and the API: it makes the node the
// reportingInstance (the broadcaster's recorder names the host) and
// reports every call's outcome.
type sink struct {
	inner  events.EventSink
	node   string
	result func(err error)
}

func (s *sink) Create(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	ev.ReportingInstance = s.node
	out, err := s.inner.Create(ctx, ev)
	s.result(err)
	return out, err
}

func (s *sink) Update(ctx context.Context, ev *eventsv1.Event) (*eventsv1.Event, error) {
	ev.ReportingInstance = s.node
	out, err := s.inner.Update(ctx, ev)
	s.result(err)
	return out, err
}

func (s *sink) Patch(ctx context.Context, ev *eventsv1.Event, data []byte) (*eventsv1.Event, error) {
	out, err := s.inner.Patch(ctx, ev, data)
	s.result(err)
	return out, err
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
