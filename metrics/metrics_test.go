package metrics

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
)

// TestScrape serves the metrics on loopback and scrapes them over HTTP.
func TestScrape(t *testing.T) {
	m := New(func() map[string]uint64 { return map[string]uint64{"mount": 7} })
	m.Event("mount")
	m.Event("mount")
	m.Event("failure")
	m.Finding("leak", "rprivate-bind", time.Now().Add(-3*time.Millisecond))
	m.SetState(State{OpenLeaks: 2, Namespaces: 41, Watched: 38, DeadNamespaces: 5, Mounts: 1234, Evicted: 3})
	m.SinkDrops(func() map[string]uint64 { return map[string]uint64{"stdout": 12, "journal": 0} })
	m.Enrichment("timed_out")
	m.K8sEvent("posted")
	m.K8sEvent("posted")

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Serve(ctx, ln, zap.NewNop()) }()
	resp, err := http.Get("http://" + ln.Addr().String() + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`mntleak_events_total{kind="mount"} 2`,
		`mntleak_events_total{kind="failure"} 1`,
		`mntleak_events_lost_total{kind="mount"} 7`,
		`mntleak_findings_total{cause="rprivate-bind",finding="leak"} 1`,
		`mntleak_leaks_open 2`,
		`mntleak_namespaces_tracked 41`,
		`mntleak_namespaces_watched 38`,
		`mntleak_namespaces_dead_kept 5`,
		`mntleak_mounts_tracked 1234`,
		`mntleak_tables_evicted 3`,
		`mntleak_finding_latency_seconds_bucket{le="0.005"} 1`,
		`mntleak_sink_dropped_total{sink="stdout"} 12`,
		`mntleak_sink_dropped_total{sink="journal"} 0`,
		`mntleak_findings_enrichment_total{result="timed_out"} 1`,
		`mntleak_k8s_events_total{result="posted"} 2`,
		`go_goroutines`,
	} {
		if !strings.Contains(string(body), want) {
			t.Errorf("scrape lacks %s", want)
		}
	}
}

func TestListenAddr(t *testing.T) {
	for in, want := range map[string]string{":9464": "127.0.0.1:9464", "0.0.0.0:9464": "0.0.0.0:9464", "[::1]:80": "[::1]:80"} {
		if got, err := ListenAddr(in); err != nil || got != want {
			t.Errorf("ListenAddr(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "9464", "host", ":", "a:b:c"} {
		if _, err := ListenAddr(bad); err == nil {
			t.Errorf("ListenAddr(%q) accepted", bad)
		}
	}
}
