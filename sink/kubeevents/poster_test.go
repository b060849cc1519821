package kubeevents

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/internal/kubeclient"
	"github.com/mntleak/mntleak/internal/kubeclient/kubetest"
)

const (
	stuckUID  = "0f3c2a4e-5b6d-4e7f-8a9b-1c2d3e4f5a6b"
	holderUID = "7d2c9a1e-3b4f-4c5d-8e6f-0a1b2c3d4e5f"
)

// counts collects Options.Count's results.
type counts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *counts) count(r string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == nil {
		c.n = map[string]int{}
	}
	c.n[r]++
}

func (c *counts) get(r string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[r]
}

func makeFinding(kind finding.FindingKind, stuck bool, holder *finding.Workload, cause finding.Cause) *finding.Finding {
	f := &finding.Finding{Kind: kind, Cause: cause, Fix: "mountPropagation: HostToContainer",
		Call:   finding.Call{PID: 40, Comm: "kubelet", Syscall: "unlinkat", Errno: "EBUSY", MntNS: 1},
		Object: finding.Object{Path: "/var/lib/kubelet/pods/" + stuckUID + "/volumes/kubernetes.io~empty-dir/cache", FSType: "tmpfs"},
		Holders: []finding.Holder{{MntNS: 2, Where: "/host/x",
			Processes: []finding.ProcRef{{PID: 50, Comm: "node_exporter", Workload: holder}}}}}
	f.Holders[0].Actor = &finding.Actor{ProcRef: f.Holders[0].Processes[0], Role: finding.RoleMember}
	if stuck {
		f.Stuck = &finding.StuckPod{UID: stuckUID, Name: "web-7f9c", Namespace: "default", Volume: "cache", VolumeType: "emptyDir",
			VolumeText: "volume cache (emptyDir)", Tmpfs: true}
	}
	return f
}

var exporter = &finding.Workload{ContainerID: "c1", Name: "node-exporter", Pod: "node-exporter-x2x", Namespace: "monitoring",
	PodUID: holderUID, PodContainer: "node-exporter"}

// eventsIn waits for n Events in the fake API (the recorder sends on
// goroutines of its own) and returns them.
func eventsIn(t *testing.T, api *kubetest.Server, n int) []kubeclient.Event {
	t.Helper()
	var items []kubeclient.Event
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		items = api.Events()
		if len(items) >= n {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if len(items) != n {
		t.Fatalf("%d events in the API, want %d: %+v", len(items), n, items)
	}
	return items
}

func TestPost(t *testing.T) {
	tests := []struct {
		name string
		f    *finding.Finding
		want []want // the Events, by the pod they regard
	}{
		{"a failure on a pod's volume: the stuck pod, related to the holder", makeFinding(finding.KindFailure, true, exporter, finding.CauseRprivateBind),
			[]want{{"default/web-7f9c", stuckUID, "monitoring/node-exporter-x2x", ReasonBusy, ActionBusy}}},
		{"a failure with no stuck pod: the holder pod", makeFinding(finding.KindFailure, false, exporter, finding.CauseRprivateBind),
			[]want{{"monitoring/node-exporter-x2x", holderUID, "", ReasonBusy, ActionBusy}}},
		{"a leak: the holder pod, and the pod whose volume leaked", makeFinding(finding.KindLeak, true, exporter, finding.CauseRprivateBind),
			[]want{{"monitoring/node-exporter-x2x", holderUID, "default/web-7f9c", ReasonLeaked, ActionLeaked},
				{"default/web-7f9c", stuckUID, "monitoring/node-exporter-x2x", ReasonLeaked, ActionLeaked}}},
		{"a Docker container holds it: the stuck pod alone", makeFinding(finding.KindFailure, true, &finding.Workload{Name: "web", Image: "busybox"}, finding.CauseInUse),
			[]want{{"default/web-7f9c", stuckUID, "", ReasonBusy, ActionBusy}}},
		{"no pod at all: nothing", makeFinding(finding.KindLeak, false, &finding.Workload{Name: "web", Image: "busybox"}, finding.CauseUnshare), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := kubetest.Start(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var c counts
			p, err := New(ctx, api.Client(t), Options{Node: "node-1", Count: c.count}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close(0)
			p.Post(tt.f)
			if len(tt.want) == 0 {
				time.Sleep(100 * time.Millisecond)
				eventsIn(t, api, 0)
				if c.get(ResultNoPod) != 1 {
					t.Errorf("no_pod counted %d times", c.get(ResultNoPod))
				}
				return
			}
			got := eventsIn(t, api, len(tt.want))
			for _, w := range tt.want {
				w.check(t, got, tt.f)
			}
			if c.get(ResultPosted) != len(tt.want) {
				t.Errorf("posted counted %d, want %d", c.get(ResultPosted), len(tt.want))
			}
		})
	}
}

type want struct {
	regarding, uid, related, reason, action string
}

func (w want) check(t *testing.T, events []kubeclient.Event, f *finding.Finding) {
	t.Helper()
	for _, e := range events {
		if e.Regarding.Namespace+"/"+e.Regarding.Name != w.regarding {
			continue
		}
		related := ""
		if e.Related != nil {
			related = e.Related.Namespace + "/" + e.Related.Name
			if e.Related.Kind != "Pod" {
				t.Errorf("related %+v is not a pod", e.Related)
			}
		}
		if e.Type != kubeclient.EventTypeWarning || e.Reason != w.reason || e.Action != w.action || related != w.related ||
			e.Regarding.UID != w.uid || e.Regarding.Kind != "Pod" || e.Regarding.APIVersion != "v1" ||
			e.ReportingController != Controller || e.ReportingInstance != "node-1" || e.Note != FindingNote(f.Headline(), f.Line()) ||
			e.Metadata.Namespace != e.Regarding.Namespace {
			t.Errorf("event on %s: type %s reason %s action %s related %q uid %s controller %s instance %s namespace %s\nnote %s\nwant %+v",
				w.regarding, e.Type, e.Reason, e.Action, related, e.Regarding.UID, e.ReportingController, e.ReportingInstance, e.Metadata.Namespace, e.Note, w)
		}
		return
	}
	t.Errorf("no event on %s", w.regarding)
}

// TestDedupAndRate: the same (pod, holder, cause) is posted once per
// window; distinct ones are limited to the burst, then one per interval.
func TestDedupAndRate(t *testing.T) {
	api := kubetest.Start(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var c counts
	now := time.Unix(1_000_000, 0)
	clock := func() time.Time { return now }
	p, err := New(ctx, api.Client(t), Options{Node: "n", Count: c.count, Burst: 3, Interval: 10 * time.Second, DedupWindow: time.Minute, Now: clock}, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close(0)
	busy := makeFinding(finding.KindFailure, true, exporter, finding.CauseRprivateBind)
	for range 5 {
		p.Post(busy) // kubelet retries the teardown: one Event
	}
	if c.get(ResultPosted) != 1 || c.get(ResultDeduplicated) != 4 {
		t.Fatalf("posted %d, deduplicated %d; want 1, 4", c.get(ResultPosted), c.get(ResultDeduplicated))
	}
	// Another cause is another Event; so is another holder.
	p.Post(makeFinding(finding.KindFailure, true, exporter, finding.CauseSharedPropagation))
	other := *exporter
	other.Pod, other.PodUID = "fluentd-abc", "11111111-2222-4333-8444-555555555555"
	p.Post(makeFinding(finding.KindFailure, true, &other, finding.CauseRprivateBind))
	if c.get(ResultPosted) != 3 {
		t.Fatalf("posted %d, want 3", c.get(ResultPosted))
	}
	// The bucket is empty: a fourth distinct one waits for a token.
	third := other
	third.Pod, third.PodUID = "x", "21111111-2222-4333-8444-555555555555"
	p.Post(makeFinding(finding.KindFailure, true, &third, finding.CauseRprivateBind))
	if c.get(ResultRateLimited) != 1 {
		t.Fatalf("rate limited %d, want 1", c.get(ResultRateLimited))
	}
	now = now.Add(10 * time.Second)
	p.Post(makeFinding(finding.KindFailure, true, &third, finding.CauseRprivateBind))
	if c.get(ResultPosted) != 4 {
		t.Fatalf("after one interval: posted %d, want 4", c.get(ResultPosted))
	}
	// After the window the first is posted again (the recorder makes it a
	// repeat in the series of the same Event).
	now = now.Add(time.Minute)
	p.Post(busy)
	if c.get(ResultPosted) != 5 {
		t.Fatalf("after the window: posted %d, want 5", c.get(ResultPosted))
	}
	if n := len(p.seen); n != 1 {
		t.Errorf("%d dedup entries kept after the window, want 1 (the old ones dropped)", n)
	}
	// In the API: one Event per (pod, related pod, reason); what was posted
	// again on the same pair (another cause, then the window passed) is
	// counted in its series, each repeat patched at once (client-go's
	// broadcaster, used before, wrote the count 2 at once and later counts
	// with a refresh every 30 minutes: 2 here).
	deadline := time.Now().Add(5 * time.Second)
	for {
		evs := eventsIn(t, api, 3)
		var series int32
		for _, e := range evs {
			if e.Related != nil && e.Related.Name == "node-exporter-x2x" && e.Series != nil {
				series = e.Series.Count
			}
		}
		if series == 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("series count %d on the stuck pod's Event about node-exporter-x2x, want 3", series)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestAPIFailure: an API server that refuses events costs a count per try
// and one log line, and Post never waits for it.
func TestAPIFailure(t *testing.T) {
	api := kubetest.Start(t)
	var mu sync.Mutex
	fail := true
	api.SetFault("create", "events", func() kubetest.Fault {
		mu.Lock()
		defer mu.Unlock()
		return kubetest.Fault{Abort: fail} // the connection closes: unreachable
	})
	core, logs := observer.New(zap.InfoLevel)
	var c counts
	p, err := New(context.Background(), api.Client(t), Options{Node: "n", Count: c.count}, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	for i := range 3 {
		w := *exporter
		w.Pod = "pod-" + string(rune('a'+i))
		p.Post(makeFinding(finding.KindFailure, false, &w, finding.CauseRprivateBind))
	}
	if d := time.Since(start); d > 100*time.Millisecond {
		t.Errorf("Post waited %v for a failing API server", d)
	}
	deadline := time.Now().Add(5 * time.Second)
	for c.get(ResultFailed) < 3 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if c.get(ResultFailed) < 3 {
		t.Fatalf("failed counted %d, want every try (3)", c.get(ResultFailed))
	}
	warned := logs.FilterMessageSnippet("does not take events").Len()
	if warned != 1 {
		t.Errorf("the outage was logged %d times, want once", warned)
	}
	mu.Lock()
	fail = false
	mu.Unlock()
	if n := p.Close(0); n != 3 {
		t.Errorf("Close: %d Events not sent, want the 3 waiting for a retry", n)
	}
}

// TestClose: what was posted before Close is sent, however late in the
// recorder it still is; Close waits no longer than its budget, nor for
// a retry that the API server's outage would need.
func TestClose(t *testing.T) {
	refused := kubetest.Fault{Abort: true} // the connection closes with no answer
	forbidden := kubetest.Fault{Code: 403, Reason: "Forbidden"}
	tests := []struct {
		name     string
		delay    time.Duration  // each create takes this long
		err      kubetest.Fault // and then fails with this
		budget   time.Duration
		unsent   int
		inAPI    int
		tookLess time.Duration
		tookMore time.Duration
	}{
		{name: "posted just before Close", budget: 5 * time.Second, inAPI: 1, tookLess: time.Second},
		{name: "a slow API server: Close waits for the call", delay: 300 * time.Millisecond, budget: 5 * time.Second, inAPI: 1,
			tookLess: 2 * time.Second, tookMore: 250 * time.Millisecond},
		// inAPI -1: not read (the call is still running).
		{name: "a call still running at the deadline", delay: 2 * time.Second, budget: 200 * time.Millisecond, unsent: 1, inAPI: -1,
			tookLess: time.Second, tookMore: 150 * time.Millisecond},
		{name: "unreachable: not waited for its retry", err: refused, budget: 5 * time.Second, unsent: 1, tookLess: time.Second},
		{name: "rejected: the recorder gives it up", err: forbidden, budget: 5 * time.Second, tookLess: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := kubetest.Start(t)
			api.SetFault("create", "events", func() kubetest.Fault {
				f := tt.err
				f.Delay = tt.delay
				return f
			})
			p, err := New(context.Background(), api.Client(t), Options{Node: "n"}, zap.NewNop())
			if err != nil {
				t.Fatal(err)
			}
			p.Post(makeFinding(finding.KindFailure, true, exporter, finding.CauseRprivateBind))
			start := time.Now()
			unsent := p.Close(tt.budget)
			took := time.Since(start)
			if unsent != tt.unsent {
				t.Errorf("Close: %d not sent, want %d", unsent, tt.unsent)
			}
			if took >= tt.tookLess || took < tt.tookMore {
				t.Errorf("Close took %v, want %v to %v", took, tt.tookMore, tt.tookLess)
			}
			if tt.inAPI < 0 {
				return
			}
			// Right after Close: no waiting here.
			if n := len(api.Events()); n != tt.inAPI {
				t.Errorf("%d Events in the API right after Close, want %d", n, tt.inAPI)
			}
			if again := p.Close(tt.budget); again != unsent {
				t.Errorf("Close again: %d, want %d", again, unsent)
			}
			p.Post(makeFinding(finding.KindLeak, true, exporter, finding.CauseUnshare)) // after Close: nothing sent, no panic
		})
	}
}

func TestNote(t *testing.T) {
	long := strings.Repeat("é", 600) // 1200 bytes
	tests := []struct {
		in   string
		want int // length in bytes
	}{
		{"short", 5},
		{strings.Repeat("a", NoteLimit), NoteLimit},
		{strings.Repeat("a", NoteLimit+1), NoteLimit},
		{long, NoteLimit - 1}, // cut on a rune boundary
	}
	for _, tt := range tests {
		got := Note(tt.in)
		if len(got) != tt.want || !strings.HasPrefix(tt.in, strings.TrimSuffix(got, "…")) {
			t.Errorf("Note(%d bytes) = %d bytes, want %d", len(tt.in), len(got), tt.want)
		}
		if len(tt.in) > NoteLimit && !strings.HasSuffix(got, "…") {
			t.Errorf("a cut note does not say so")
		}
	}
}
