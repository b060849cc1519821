package daemon

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/mntleak/mntleak/internal/logkey"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/sink/kubeevents"
)

// apiServer is an API server that knows one pod on node-1 and takes
// Events slowly (as a loaded one does).
type apiServer struct {
	delay  time.Duration
	mu     sync.Mutex
	events []*eventsv1.Event
}

const stuckUIDForEvents = "5a1e0c9d-7b3f-4a2e-9c1d-2b3c4d5e6f70"

func (a *apiServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && r.URL.Path == "/api/v1/pods":
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","items":[{"metadata":{"name":"web","namespace":"shop","uid":"`+
			stuckUIDForEvents+`"},"spec":{"nodeName":"node-1"}}]}`)
	case r.Method == http.MethodPost && r.URL.Path == "/apis/events.k8s.io/v1/namespaces/shop/events":
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		// client-go sends protobuf or JSON.
		obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil)
		ev, ok := obj.(*eventsv1.Event)
		if err != nil || !ok {
			http.Error(w, fmt.Sprintf("not an Event: %v", err), http.StatusBadRequest)
			return
		}
		time.Sleep(a.delay)
		a.mu.Lock()
		a.events = append(a.events, ev)
		a.mu.Unlock()
		out, err := json.Marshal(ev)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(out)
	default:
		http.NotFound(w, r)
	}
}

func (a *apiServer) received() []*eventsv1.Event {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]*eventsv1.Event(nil), a.events...)
}

// TestEventsSentAtExit: a finding handed on just before the daemon stops is
// logged and its Event reaches the API server before the findings' path
// has closed, even from a slow server (before, the broadcaster was shut
// down with the context, before the findings still queued were logged:
// their Events were dropped).
// openTestFindings opens a finding's path after the correlator for cfg,
// with no outputs but its log, which it returns; a failed write fails the
// test.
func openTestFindings(t *testing.T, cfg Config) (*findings, *observer.ObservedLogs) {
	t.Helper()
	p := &pipeline{cfg: cfg, sinks: &sinks{}, fail: func(err error) {
		if err != nil {
			t.Error(err)
		}
	}}
	core, logs := observer.New(zap.InfoLevel)
	fs, err := openFindings(context.Background(), cfg, p, zap.New(core))
	if err != nil {
		t.Fatal(err)
	}
	return fs, logs
}

func TestEventsSentAtExit(t *testing.T) {
	api := &apiServer{delay: 300 * time.Millisecond}
	srv := httptest.NewServer(api)
	defer srv.Close()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+srv.URL+`"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := Config{Kube: true, Kubeconfig: kubeconfig, K8sEvents: true, NodeName: "node-1",
		KubeletRoot: "/var/lib/kubelet", RuntimeTimeout: 2 * time.Second}
	fs, logs := openTestFindings(t, cfg)
	f := &finding.Finding{Kind: finding.KindFailure, Cause: finding.CauseRprivateBind,
		Call: finding.Call{PID: 40, Comm: "kubelet", Syscall: "unlinkat", Errno: "EBUSY", MntNS: 1},
		Object: finding.Object{Path: "/var/lib/kubelet/pods/" + stuckUIDForEvents + "/volumes/kubernetes.io~empty-dir/data",
			FSType: "tmpfs"},
		Holders: []finding.Holder{{MntNS: 2, Where: "/x", Processes: []finding.ProcRef{{PID: 50, Comm: "agent"}}}}}
	fs.submit(f)
	start := time.Now()
	fs.close()
	took := time.Since(start)

	if n := logs.FilterMessageSnippet("pod shop/web stuck").Len(); n != 1 {
		t.Errorf("%d finding lines naming pod shop/web, want 1: %v", n, logs.All())
	}
	got := api.received()
	if len(got) != 1 {
		t.Fatalf("%d Events at the API server when the findings' path closed, want 1", len(got))
	}
	if e := got[0]; e.Reason != "MountBusy" || e.Regarding.Name != "web" || string(e.Regarding.UID) != stuckUIDForEvents ||
		e.ReportingInstance != "node-1" || e.Note != kubeevents.FindingNote(f.Headline(), f.Line()) {
		t.Errorf("Event: reason %s regarding %+v instance %s note %s", e.Reason, e.Regarding, e.ReportingInstance, e.Note)
	}
	if limit := enrichCloseBudget + eventsCloseBudget; took > limit {
		t.Errorf("close took %v, over its budget %v", took, limit)
	}
	if n := logs.FilterMessageSnippet("not sent before exit").Len(); n != 0 {
		t.Errorf("%d lines say Events were not sent", n)
	}
}

// TestFindingsFromTwoGoroutines: with the enrichment queue overflowing,
// findings are handed on from the event path and from the enricher at
// once: every one is logged, and a state dir that cannot keep them is
// warned about once. (The Go memory model orders a buffered channel's
// sends after earlier receives, so -race did not see the unlocked flag
// here; the lock is for the findings file's rotation, stat then rename.)
func TestFindingsFromTwoGoroutines(t *testing.T) {
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, stateDir string
		warnings       int
	}{
		{"kept", t.TempDir(), 0},
		{"cannot keep", notADir, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs, logs := openTestFindings(t, Config{StateDir: tc.stateDir, NodeName: "node-1", KubeletRoot: "/var/lib/kubelet"})
			const n = 3000
			for i := range n {
				fs.submit(&finding.Finding{Kind: finding.KindFailure, Cause: finding.CauseInUse,
					Call:   finding.Call{PID: uint32(1000 + i), Comm: "umount", Syscall: "umount2", Errno: "EBUSY", MntNS: 1},
					Object: finding.Object{Path: fmt.Sprintf("/mnt/%d", i)}})
			}
			fs.close()
			if got := logs.FilterMessageSnippet("umount2").Len(); got != n {
				t.Errorf("%d findings logged, want %d", got, n)
			}
			if got := logs.FilterMessageSnippet("keep findings in the state dir").Len(); got != tc.warnings {
				t.Errorf("%d warnings about the state dir, want %d", got, tc.warnings)
			}
			skipped := logs.FilterField(zap.String(logkey.Enrichment, "skipped: queue full")).Len()
			if skipped == 0 {
				t.Errorf("the queue never overflowed: nothing came from the event path")
			}
			t.Logf("%d of %d findings handed on from the event path", skipped, n)
		})
	}
}
