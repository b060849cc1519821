package enrich

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/finding"
)

const (
	stuckUID   = "0f3c2a4e-5b6d-4e7f-8a9b-1c2d3e4f5a6b"
	exporterID = "3f1c0e6e8b8a4f4d9c2b7a6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c"
	webID      = "5f2c7a9d0b1e5f2c7a9d0b1e5f2c7a9d0b1e5f2c7a9d0b1e5f2c7a9d0b1e5f2c"
	unknownID  = "0000000000000000000000000000000000000000000000000000000000000000"
	volPath    = "/var/lib/kubelet/pods/" + stuckUID + "/volumes/kubernetes.io~empty-dir/cache"
)

// table is an attribution.Source over fixed containers and pods; fail
// makes it fail every question, slow makes it wait for the deadline.
type table struct {
	fail, slow bool
}

func (table) Name() string { return "table" }

func (s table) Container(ctx context.Context, id string) (attribution.Container, error) {
	if err := s.trouble(ctx); err != nil {
		return attribution.Container{}, err
	}
	switch id {
	case exporterID:
		return attribution.Container{ID: id, Runtime: "cri", Name: "node-exporter", Image: "node-exporter:v1", Pod: "node-exporter-x2x",
			Namespace: "monitoring", PodUID: "7d2c9a1e-3b4f-4c5d-8e6f-0a1b2c3d4e5f", PodContainer: "node-exporter"}, nil
	case webID:
		return attribution.Container{ID: id, Runtime: "docker", Name: "web", Image: "busybox"}, nil
	}
	return attribution.Container{}, attribution.ErrNotFound
}

func (s table) Pod(ctx context.Context, uid string) (attribution.Pod, error) {
	if err := s.trouble(ctx); err != nil {
		return attribution.Pod{}, err
	}
	if uid == stuckUID {
		return attribution.Pod{UID: uid, Name: "web-7f9c", Namespace: "default", Source: "table"}, nil
	}
	return attribution.Pod{}, attribution.ErrNotFound
}

func (s table) trouble(ctx context.Context) error {
	switch {
	case s.slow:
		<-ctx.Done()
		return ctx.Err()
	case s.fail:
		return errors.New("connection reset by peer")
	}
	return nil
}

// makeFinding is a leak of the emptyDir volume held in mnt:[2]: the caller
// in no container, a member in containerID, a pin in pinID.
func makeFinding(path, where, containerID, pinID string) *finding.Finding {
	proc := finding.ProcRef{PID: 50, Comm: "node_exporter", Container: containerID}
	pin := finding.PinRef{ProcRef: finding.ProcRef{PID: 51, Comm: "sh", Container: pinID}, MntNS: 2, Pin: "cwd", Path: where}
	return &finding.Finding{Kind: finding.KindLeak, Cause: finding.CauseRprivateBind, Fix: "f",
		Call:   finding.Call{PID: 40, Comm: "umount", Syscall: "umount2", MntNS: 1},
		Object: finding.Object{Path: path, FSType: "tmpfs"},
		Holders: []finding.Holder{{MntNS: 2, Where: where, Processes: []finding.ProcRef{proc}, Pins: []finding.PinRef{pin},
			Actor: &finding.Actor{ProcRef: pin.ProcRef, Role: finding.RolePinner, Pin: "cwd", Path: where}}}}
}

// ext4 makes f's object a block device's filesystem.
func ext4(f *finding.Finding) *finding.Finding {
	f.Object.FSType = "ext4"
	return f
}

func TestFill(t *testing.T) {
	tests := []struct {
		name     string
		src      table
		f        *finding.Finding
		stuck    *finding.StuckPod
		member   string // the member's workload text
		actor    string // the actor's (a pinner) workload text
		problem  string // prefix of the enrichment field
		noLookup bool
	}{
		{"a pod's volume held by a pod and a named container", table{}, makeFinding(volPath, "/host"+volPath, exporterID, webID),
			&finding.StuckPod{UID: stuckUID, Name: "web-7f9c", Namespace: "default", Volume: "cache", VolumeType: "emptyDir",
				VolumeText: "volume cache (emptyDir)", Tmpfs: true},
			"pod monitoring/node-exporter-x2x (container node-exporter)", "container web (busybox)", "", false},
		{"the copy through a hostPath names the pod", table{}, ext4(makeFinding("/dev/zram1", "/rootfs"+volPath, webID, "")),
			&finding.StuckPod{UID: stuckUID, Name: "web-7f9c", Namespace: "default", Volume: "cache", VolumeType: "emptyDir",
				VolumeText: "volume cache (emptyDir)"},
			"container web (busybox)", "", "", false},
		{"an unknown container is no problem", table{}, makeFinding("/srv/x", "/srv/x", unknownID, ""), nil, "", "", "", false},
		{"a failing runtime", table{fail: true}, makeFinding(volPath, volPath, exporterID, ""),
			&finding.StuckPod{UID: stuckUID, Volume: "cache", VolumeType: "emptyDir", VolumeText: "volume cache (emptyDir)", Tmpfs: true},
			"", "", "failed: pod " + stuckUID + ": table: connection reset by peer (+1 more)", false},
		{"a slow runtime", table{slow: true}, makeFinding("/srv/x", "/srv/x", exporterID, ""), nil, "", "", "timed out: container " + exporterID, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := attribution.NewResolver(attribution.Options{Timeout: 50 * time.Millisecond}, tt.src)
			Fill(context.Background(), tt.f, Config{Node: "node-1", Timeout: time.Second}, r)
			f := tt.f
			if f.Node != "node-1" {
				t.Errorf("node %q", f.Node)
			}
			if (f.Stuck == nil) != (tt.stuck == nil) || (f.Stuck != nil && *f.Stuck != *tt.stuck) {
				t.Errorf("stuck %+v, want %+v", f.Stuck, tt.stuck)
			}
			h := f.Holders[0]
			if got := h.Processes[0].Workload.Text(); got != tt.member {
				t.Errorf("member %q, want %q", got, tt.member)
			}
			if got := h.Actor.Workload.Text(); got != tt.actor {
				t.Errorf("actor %q, want %q", got, tt.actor)
			}
			if got := h.Pins[0].Workload.Text(); got != tt.actor {
				t.Errorf("pin %q, want %q (the actor is the pinner)", got, tt.actor)
			}
			if !strings.HasPrefix(f.Enrichment, tt.problem) || (tt.problem == "") != (f.Enrichment == "") {
				t.Errorf("enrichment %q, want %q", f.Enrichment, tt.problem)
			}
			if f.Call.Workload != nil {
				t.Errorf("the caller is in no container: %+v", f.Call.Workload)
			}
		})
	}
}

// collector gathers what an Enricher hands on; hold blocks it until
// released.
type collector struct {
	mu    sync.Mutex
	got   []*finding.Finding
	hold  chan struct{}
	first chan struct{} // closed when the first finding arrives
	once  sync.Once
}

func newCollector(hold bool) *collector {
	c := &collector{first: make(chan struct{})}
	if hold {
		c.hold = make(chan struct{})
	}
	return c
}

func (c *collector) out(f *finding.Finding) {
	c.once.Do(func() { close(c.first) })
	if c.hold != nil && f.Enrichment == "" {
		<-c.hold
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.got = append(c.got, f)
}

func (c *collector) findings() []*finding.Finding {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*finding.Finding(nil), c.got...)
}

// TestEnricherNeverWaits: Submit returns at once whatever the runtime and
// the output do; a full queue hands findings on unenriched, saying so;
// Close hands every finding on.
func TestEnricherNeverWaits(t *testing.T) {
	c := newCollector(true)
	e := New(Config{Queue: 2, Node: "n"}, attribution.NewResolver(attribution.Options{}, table{}), nil, c.out)
	e.Start()
	start := time.Now()
	for i := range 6 {
		f := makeFinding(volPath, volPath, exporterID, "")
		f.Call.PID = uint32(100 + i)
		e.Submit(f)
		if i == 0 {
			<-c.first // the goroutine holds the first one: the queue is empty again
		}
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Submit waited %v", d)
	}
	// One being handed on, two queued, three skipped at once.
	skipped := c.findings()
	if len(skipped) != 3 {
		t.Fatalf("%d findings handed on before the output was released, want the 3 skipped", len(skipped))
	}
	for _, f := range skipped {
		if f.Enrichment != "skipped: queue full" || f.Stuck == nil || f.Stuck.Name != "" || f.Node != "n" {
			t.Errorf("skipped finding: enrichment %q, stuck %+v, node %q", f.Enrichment, f.Stuck, f.Node)
		}
	}
	close(c.hold)
	e.Close(time.Second)
	all := c.findings()
	if len(all) != 6 {
		t.Fatalf("%d findings handed on after Close, want 6", len(all))
	}
	var order []uint32
	for _, f := range all[3:] {
		order = append(order, f.Call.PID)
		if f.Enrichment != "" || f.Stuck.Name != "web-7f9c" {
			t.Errorf("enriched finding: enrichment %q, stuck %+v", f.Enrichment, f.Stuck)
		}
	}
	if order[0] != 100 || order[1] != 101 || order[2] != 102 {
		t.Errorf("enriched in order %v, want 100 101 102", order)
	}
	// After Close: handed on at once.
	e.Submit(makeFinding(volPath, volPath, "", ""))
	if got := c.findings(); len(got) != 7 || got[6].Enrichment != "skipped: the daemon is stopping" {
		t.Errorf("a finding after Close: %d handed on", len(got))
	}
}

// TestCloseBudget: a runtime that never answers cannot hold the daemon's
// exit: Close cancels the questions once its budget is spent.
func TestCloseBudget(t *testing.T) {
	c := newCollector(false)
	e := New(Config{Timeout: time.Minute}, attribution.NewResolver(attribution.Options{Timeout: time.Minute}, table{slow: true}), nil, c.out)
	e.Start()
	for range 3 {
		e.Submit(makeFinding("/srv/x", "/srv/x", exporterID, ""))
	}
	start := time.Now()
	e.Close(100 * time.Millisecond)
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("Close took %v with a 100ms budget", d)
	}
	got := c.findings()
	if len(got) != 3 {
		t.Fatalf("%d findings handed on, want 3", len(got))
	}
	for _, f := range got {
		if !strings.Contains(f.Enrichment, "context canceled") {
			t.Errorf("enrichment %q, want the cancellation said", f.Enrichment)
		}
	}
}

// TestReplayMatchesLive: the recorded answers fill a replay's findings
// exactly as the live ones were, skips and failures included.
func TestReplayMatchesLive(t *testing.T) {
	var lines [][]byte
	var mu sync.Mutex
	record := func(r *attribution.Record) {
		b, err := json.Marshal(r)
		if err != nil {
			t.Error(err)
		}
		mu.Lock()
		defer mu.Unlock()
		lines = append(lines, b)
	}
	findings := func() []*finding.Finding {
		return []*finding.Finding{
			makeFinding(volPath, "/host"+volPath, exporterID, webID),
			makeFinding("/srv/x", "/srv/x", unknownID, exporterID),
			ext4(makeFinding("/dev/zram1", "/rootfs"+volPath, webID, "")),
		}
	}
	c := newCollector(false)
	src := &flaky{}
	res := attribution.NewResolver(attribution.Options{NegativeTTL: time.Hour}, src)
	e := New(Config{Node: "node-1", KubeletRoot: "/var/lib/kubelet"}, attribution.Recorder{Lookup: res, Write: record}, record, c.out)
	e.Start()
	live := findings()
	for _, f := range live {
		e.Submit(f)
	}
	e.Close(5 * time.Second)
	e.Submit(makeFinding(volPath, volPath, webID, "")) // skipped: after Close

	answers := attribution.NewReplay()
	for _, b := range lines {
		var r attribution.Record
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatal(err)
		}
		answers.Add(&r)
	}
	rp, ok := NewReplayer(answers)
	if !ok {
		t.Fatal("no settings recorded")
	}
	replayed := append(findings(), makeFinding(volPath, volPath, webID, ""))
	got := c.findings()
	for i, f := range replayed {
		rp.Apply(f)
		a, _ := json.Marshal(got[i])
		b, _ := json.Marshal(f)
		if string(a) != string(b) {
			t.Errorf("finding %d:\nlive   %s\nreplay %s", i, a, b)
		}
		if got[i].Line() != f.Line() {
			t.Errorf("finding %d line:\nlive   %s\nreplay %s", i, got[i].Line(), f.Line())
		}
	}
	if !strings.HasPrefix(got[1].Enrichment, "failed: ") || got[3].Enrichment != "skipped: the daemon is stopping" {
		t.Errorf("the live run had no failure or skip to replay: %q, %q", got[1].Enrichment, got[3].Enrichment)
	}
	if _, ok := NewReplayer(attribution.NewReplay()); ok {
		t.Errorf("a recording without settings is enriched")
	}
}

// flaky fails its first question about the exporter, then answers as
// table does: the live run meets a failure (remembered by the resolver)
// that its replay must meet too.
type flaky struct {
	mu     sync.Mutex
	failed bool
}

func (*flaky) Name() string { return "flaky" }

func (s *flaky) Container(ctx context.Context, id string) (attribution.Container, error) {
	s.mu.Lock()
	fail := id == exporterID && !s.failed
	s.failed = s.failed || fail
	s.mu.Unlock()
	return table{fail: fail}.Container(ctx, id)
}

func (s *flaky) Pod(ctx context.Context, uid string) (attribution.Pod, error) {
	return table{}.Pod(ctx, uid)
}

// TestPodsNamedInTheFix: what the correlator said of a pod by its UID (a
// cgroup path is all it has) reads as NAMESPACE/NAME once the runtime named
// the pod; a pod nobody named keeps its UID.
func TestPodsNamedInTheFix(t *testing.T) {
	const exporterUID, otherUID = "7d2c9a1e-3b4f-4c5d-8e6f-0a1b2c3d4e5f", "11111111-2222-3333-4444-555555555555"
	f := makeFinding("/srv/x", "/srv/x", exporterID, "")
	f.Summary = "held by the hostPath of pod " + exporterUID + " and pod " + otherUID
	f.Fix = "mountPropagation: HostToContainer for the volume of pod " + exporterUID + "; restart it"
	r := attribution.NewResolver(attribution.Options{Timeout: 50 * time.Millisecond}, table{})
	Fill(context.Background(), f, Config{Node: "node-1", Timeout: time.Second}, r)
	if want := "held by the hostPath of pod monitoring/node-exporter-x2x and pod " + otherUID; f.Summary != want {
		t.Errorf("summary %q, want %q", f.Summary, want)
	}
	if want := "mountPropagation: HostToContainer for the volume of pod monitoring/node-exporter-x2x; restart it"; f.Fix != want {
		t.Errorf("fix %q, want %q", f.Fix, want)
	}
}

// TestResult: the metric's label for each enrichment field this package
// writes.
func TestResult(t *testing.T) {
	skipped := &finding.Finding{}
	skip(skipped, Config{}, "queue full")
	for _, tt := range []struct {
		name       string
		enrichment string
		want       string
	}{
		{"enriched", "", "ok"},
		{"timed out", problem([]error{fmt.Errorf("ask containerd: %w", context.DeadlineExceeded)}), "timed_out"},
		{"failed", problem([]error{errors.New("connection refused"), errors.New("x")}), "failed"},
		{"skipped", skipped.Enrichment, "skipped"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := Result(&finding.Finding{Enrichment: tt.enrichment}); got != tt.want {
				t.Errorf("Result(%q) = %s, want %s", tt.enrichment, got, tt.want)
			}
		})
	}
}
