package kubeevents

import (
	"context"
	"sync"
	"time"
	"unicode/utf8"

	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/internal/kubeclient"
	"github.com/mntleak/mntleak/internal/logkey"
)

// Reasons and actions of the Events posted.
const (
	ReasonBusy   = "MountBusy"   // a failure: the pod's teardown (or another call) fails
	ReasonLeaked = "MountLeaked" // a leak as it forms
	ActionBusy   = "Teardown"
	ActionLeaked = "Unmount"
	// Controller is the reportingController.
	Controller = "mntleak"
	// NoteLimit is the API's limit on an Event's note, in bytes.
	NoteLimit = 1024
)

// Results counted (Options.Count).
const (
	ResultPosted       = "posted"       // handed to the recorder
	ResultDeduplicated = "deduplicated" // the same (pod, holder, cause) within the window
	ResultRateLimited  = "rate_limited" // over the rate
	ResultFailed       = "failed"       // an API call failed (each retry counts)
	ResultNoPod        = "no_pod"       // a finding that names no pod by name
)

// Options tunes a Poster. Zero values take the defaults.
type Options struct {
	// Node is the reportingInstance.
	Node string
	// DedupWindow: an Event with the same (pod, holder, cause, reason) is
	// posted once per window. Default 10m.
	DedupWindow time.Duration
	// Burst Events may be posted at once, then one per Interval. Default
	// 10 and 6s.
	Burst    int
	Interval time.Duration
	// Count is called with each result (metrics); nil for none.
	Count func(result string)
	// Now is the clock (tests). Default time.Now.
	Now func() time.Time
}

func (o *Options) defaults() {
	if o.DedupWindow == 0 {
		o.DedupWindow = 10 * time.Minute
	}
	if o.Burst == 0 {
		o.Burst = 10
	}
	if o.Interval == 0 {
		o.Interval = 6 * time.Second
	}
	if o.Count == nil {
		o.Count = func(string) {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Poster posts findings as Events.
type Poster struct {
	opts     Options
	recorder *recorder
	log      *zap.Logger

	mu    sync.Mutex
	seen  map[dedupKey]time.Time
	limit *rate.Limiter // Burst at once, then one per Interval

	calls     *calls             // the sink's calls, for Close
	stop      context.CancelFunc // ends the recorder's sends and retries
	closeOnce sync.Once
	unsent    int
}

// closeQuiet is how long Close sees no post and no API call before it
// takes what was posted as handed to the API (the recorder sends an Event
// from a goroutine of its own, whose start nothing waits for: it takes
// microseconds).
const closeQuiet = 100 * time.Millisecond

type dedupKey struct {
	regarding, related, cause, reason string
}

// New returns a Poster that sends to api's events.k8s.io/v1 Events
// until Close. ctx gives the values its requests carry; its end does not
// stop them (Close does), so that what a stopping daemon still posts is
// sent.
func New(ctx context.Context, api EventAPI, opts Options, log *zap.Logger) (*Poster, error) {
	opts.defaults()
	p := &Poster{opts: opts, log: log, seen: map[dedupKey]time.Time{},
		limit: rate.NewLimiter(rate.Every(opts.Interval), opts.Burst),
		calls: newCalls()}
	var down outage
	s := &sink{api: api, node: opts.Node, calls: p.calls, result: func(err error) {
		if err != nil {
			opts.Count(ResultFailed)
		}
		if down.change(err != nil) {
			if err != nil {
				log.Warn("the API server does not take events (retried; logged once until it does)", zap.Error(err))
			} else {
				log.Info("the API server takes events again")
			}
		}
	}}
	run, stop := context.WithCancel(context.WithoutCancel(ctx))
	p.stop = stop
	p.recorder = newRecorder(run, s, opts.Now)
	return p, nil
}

// Close sends what was posted: it waits, at most budget, until no API
// call runs and nothing was posted or called for closeQuiet, then shuts
// the recorder down, stops its retries and returns how many Events
// were not sent (a call still running at the deadline, or one that failed
// and waited to be retried). Safe to call twice; Post after Close sends
// nothing.
func (p *Poster) Close(budget time.Duration) int {
	p.closeOnce.Do(func() {
		deadline := time.Now().Add(budget)
		for !p.calls.settled(time.Now(), closeQuiet) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		p.stop()
		p.unsent = p.calls.unsent()
	})
	return p.unsent
}

// post is one Event to post for a finding.
type post struct {
	regarding, related *kubeclient.ObjectReference
	reason, action     string
}

// Post posts f's Events; it never waits.
func (p *Poster) Post(f *finding.Finding) {
	posts := plan(f)
	if len(posts) == 0 && (f.Kind == finding.KindFailure || f.Kind == finding.KindLeak) {
		p.opts.Count(ResultNoPod)
	}
	note := FindingNote(f.Headline(), f.Line())
	for _, e := range posts {
		if result := p.admit(e, f.Cause.String()); result != ResultPosted {
			p.opts.Count(result)
			continue
		}
		p.opts.Count(ResultPosted)
		p.calls.touch()
		p.recorder.record(e, note)
		p.log.Debug("event posted", zap.String(logkey.Reason, e.reason),
			zap.String(logkey.Pod, e.regarding.Namespace+"/"+e.regarding.Name))
	}
}

// plan is the Events a finding posts: see the package's doc.
func plan(f *finding.Finding) []post {
	var stuck, holder *kubeclient.ObjectReference
	if s := f.Stuck; s != nil && s.Name != "" {
		stuck = podRef(s.Namespace, s.Name, s.UID)
	}
	if w := f.HolderWorkload(); w != nil && w.Pod != "" {
		holder = podRef(w.Namespace, w.Pod, w.PodUID)
	}
	if stuck != nil && holder != nil && stuck.UID != "" && stuck.UID == holder.UID {
		holder = nil // the pod holds its own volume: one Event on it
	}
	switch f.Kind {
	case finding.KindFailure:
		switch {
		case stuck != nil:
			return []post{{regarding: stuck, related: holder, reason: ReasonBusy, action: ActionBusy}}
		case holder != nil:
			return []post{{regarding: holder, reason: ReasonBusy, action: ActionBusy}}
		}
	case finding.KindLeak:
		var out []post
		if holder != nil {
			out = append(out, post{regarding: holder, related: stuck, reason: ReasonLeaked, action: ActionLeaked})
		}
		if stuck != nil {
			out = append(out, post{regarding: stuck, related: holder, reason: ReasonLeaked, action: ActionLeaked})
		}
		return out
	}
	return nil
}

func podRef(namespace, name, uid string) *kubeclient.ObjectReference {
	return &kubeclient.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: namespace, Name: name, UID: uid}
}

func refKey(r *kubeclient.ObjectReference) string {
	if r == nil {
		return ""
	}
	return r.Namespace + "/" + r.Name + "/" + r.UID
}

// admit decides whether e is posted: not when the same one was within the
// dedup window, nor when the bucket is empty.
func (p *Poster) admit(e post, cause string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.opts.Now()
	k := dedupKey{regarding: refKey(e.regarding), related: refKey(e.related), cause: cause, reason: e.reason}
	if t, ok := p.seen[k]; ok && now.Sub(t) < p.opts.DedupWindow {
		return ResultDeduplicated
	}
	if !p.limit.AllowN(now, 1) {
		return ResultRateLimited
	}
	p.seen[k] = now
	for key, t := range p.seen { // bounded: entries older than the window go
		if now.Sub(t) >= p.opts.DedupWindow {
			delete(p.seen, key)
		}
	}
	return ResultPosted
}

// FindingNote is a finding's note: its headline (what is stuck, who holds
// it, the cause: what `kubectl get events` shows first), then its long
// line, cut to the limit (Note). The tests build the note they expect
// from the logged headline and message with it.
func FindingNote(headline, line string) string { return Note(headline + ". " + line) }

// Note is s cut to the API's note limit, on a rune boundary, with "…" to
// say it was cut.
func Note(s string) string {
	if len(s) <= NoteLimit {
		return s
	}
	const ellipsis = "…"
	cut := NoteLimit - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + ellipsis
}
