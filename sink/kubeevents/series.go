package kubeevents

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/mntleak/mntleak/internal/kubeclient"
)

// How an Event is sent, as client-go's tools/events broadcaster did: up
// to maxTries tries, retryWait apart, while the server cannot be reached;
// an Event like one sent within seriesWindow (the same pods, reason,
// action and type) counts in that Event's series instead of making a new
// one.
const (
	maxTries     = 12
	retryWait    = 10 * time.Second
	seriesWindow = 6 * time.Minute
)

// seriesKey is what makes two Events one series (the note is not part of
// it: another cause on the same pods is a repeat).
type seriesKey struct {
	regarding, related, reason, action, kind string
}

// sent is an Event made, and its repeats so far.
type sent struct {
	mu       sync.Mutex // held while the Event is being sent: a repeat waits for its first send
	event    kubeclient.Event
	count    int32     // 1: no repeat yet
	observed time.Time // the last repeat, or when it was made
}

// recorder makes the Events of the posts and sends each on a goroutine of
// its own (Post never waits).
type recorder struct {
	sink *sink
	ctx  context.Context // ends at Close: no more tries
	now  func() time.Time
	wg   sync.WaitGroup

	mu     sync.Mutex
	series map[seriesKey]*sent
	last   int64 // the last name's nanoseconds: names are unique
}

func newRecorder(ctx context.Context, s *sink, now func() time.Time) *recorder {
	return &recorder{sink: s, ctx: ctx, now: now, series: map[seriesKey]*sent{}}
}

// record sends an Event regarding e.regarding, or counts a repeat in its
// series.
func (r *recorder) record(e post, note string) {
	now := r.now()
	ev := kubeclient.Event{
		Metadata:            kubeclient.ObjectMeta{Namespace: e.regarding.Namespace},
		EventTime:           kubeclient.MicroTime{Time: now},
		ReportingController: Controller, Action: e.action, Reason: e.reason,
		Regarding: *e.regarding, Related: e.related, Note: note, Type: kubeclient.EventTypeWarning,
	}
	k := seriesKey{regarding: refKey(e.regarding), related: refKey(e.related), reason: e.reason, action: e.action, kind: ev.Type}
	r.mu.Lock()
	for key, s := range r.series { // bounded: series over go
		if now.Sub(s.observed) >= seriesWindow || now.Before(s.observed) {
			delete(r.series, key)
		}
	}
	s, repeat := r.series[k]
	if !repeat {
		ev.Metadata.Name = r.name(e.regarding.Name)
		s = &sent{event: ev, count: 1}
		r.series[k] = s
	}
	s.observed = now
	r.mu.Unlock()
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		s.mu.Lock()
		defer s.mu.Unlock()
		ev := s.event
		if repeat {
			r.mu.Lock()
			s.count++
			ev.Series = &kubeclient.EventSeries{Count: s.count, LastObservedTime: kubeclient.MicroTime{Time: s.observed}}
			r.mu.Unlock()
		}
		r.send(&ev)
	}()
}

// name is an Event's name: the pod's, a dot and the time in hex
// nanoseconds, as client-go names them; never the same twice.
func (r *recorder) name(pod string) string {
	ns := time.Now().UnixNano()
	if ns <= r.last {
		ns = r.last + 1
	}
	r.last = ns
	return pod + "." + strconv.FormatInt(ns, 16)
}

// send tries ev until it is sent, given up, maxTries are made or the
// recorder's context ends.
func (r *recorder) send(ev *kubeclient.Event) {
	for try := 1; ; try++ {
		if r.ctx.Err() != nil || !r.sink.record(r.ctx, ev) || try == maxTries {
			return
		}
		select {
		case <-r.ctx.Done():
			return
		case <-time.After(retryWait):
		}
	}
}
