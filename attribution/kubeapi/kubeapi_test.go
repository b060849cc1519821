package kubeapi

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/internal/kubeclient/kubetest"
)

var pod = kubetest.Pod

func TestSource(t *testing.T) {
	api := kubetest.Start(t,
		pod("web-7f9c", "default", "u1", "node-1", "c1"),
		pod("elsewhere", "default", "u2", "node-2", "c2"),
	)
	s := New(api.Client(t), "node-1")
	ctx := context.Background()
	if p, err := s.Pod(ctx, "u1"); err != nil || p != (attribution.Pod{UID: "u1", Name: "web-7f9c", Namespace: "default", Source: "api"}) {
		t.Errorf("Pod(u1) = %+v, %v", p, err)
	}
	// Another node's pod is not this node's (the selector asks the server
	// for this node's, and the Source checks).
	if _, err := s.Pod(ctx, "u2"); !errors.Is(err, attribution.ErrNotFound) {
		t.Errorf("a pod on another node: %v", err)
	}
	want := attribution.Container{ID: "c1", Runtime: "api", Name: "app", Image: "busybox:1.36", Pod: "web-7f9c", Namespace: "default",
		PodUID: "u1", PodContainer: "app"}
	if c, err := s.Container(ctx, "c1"); err != nil || c != want {
		t.Errorf("Container(c1) = %+v, %v", c, err)
	}
	if _, err := s.Container(ctx, "c9"); !errors.Is(err, attribution.ErrNotFound) {
		t.Errorf("unknown container: %v", err)
	}
}

// TestOneListServesAFinding: lookups within listTTL of a list use it (a
// finding's caller, holder and leaker make one request); after it, or
// after a failed list, the server is asked again.
func TestOneListServesAFinding(t *testing.T) {
	api := kubetest.Start(t, pod("web-7f9c", "default", "u1", "node-1", "c1"), pod("agent", "kube-system", "u3", "node-1", "c3"))
	s := New(api.Client(t), "node-1")
	now := time.Date(2026, 11, 25, 9, 0, 0, 0, time.UTC)
	s.now = func() time.Time { return now }
	lists := func() int { return api.Requests("list", "pods") }
	ctx := context.Background()
	for _, step := range []struct {
		name    string
		advance time.Duration
		lookup  func() error
		lists   int
	}{
		{"the caller's container", 0, func() error { _, err := s.Container(ctx, "c1"); return err }, 1},
		{"the holder's pod, a moment later", 500 * time.Millisecond, func() error { _, err := s.Pod(ctx, "u3"); return err }, 1},
		{"an unknown container, same list", 500 * time.Millisecond, func() error {
			if _, err := s.Container(ctx, "c9"); !errors.Is(err, attribution.ErrNotFound) {
				return err
			}
			return nil
		}, 1},
		{"after the TTL", listTTL, func() error { _, err := s.Pod(ctx, "u1"); return err }, 2},
		{"the clock went back", -time.Minute, func() error { _, err := s.Pod(ctx, "u1"); return err }, 3},
	} {
		now = now.Add(step.advance)
		if err := step.lookup(); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		if got := lists(); got != step.lists {
			t.Errorf("%s: %d lists so far, want %d", step.name, got, step.lists)
		}
	}
	// A failed list is not kept.
	now = now.Add(time.Hour)
	api.SetFault("list", "pods", func() kubetest.Fault {
		return kubetest.Fault{Code: 500, Reason: "InternalError"} // etcd unavailable
	})
	for i := 0; i < 2; i++ {
		if _, err := s.Pod(ctx, "u1"); err == nil {
			t.Fatal("a failed list answered")
		}
	}
	if got := lists(); got != 5 {
		t.Errorf("%d lists after two failed lookups, want 5 (each asks)", got)
	}
}
