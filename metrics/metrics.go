package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.uber.org/zap"

	"github.com/mntleak/mntleak/internal/logkey"
)

// Metrics holds the collectors.
type Metrics struct {
	reg    *prometheus.Registry
	events *prometheus.CounterVec
	// eventCounters caches events' counter per kind (string → Counter).
	eventCounters sync.Map
	findings      *prometheus.CounterVec
	leaksOpen     prometheus.Gauge
	namespaces    prometheus.Gauge
	watched       prometheus.Gauge
	dead          prometheus.Gauge
	mounts        prometheus.Gauge
	evicted       prometheus.Gauge
	latency       prometheus.Histogram
	enrichment    *prometheus.CounterVec
	k8sEvents     *prometheus.CounterVec
}

// LostFunc returns the kernel's lost-event counters by event kind.
type LostFunc func() map[string]uint64

// New registers the metrics; lost is read at every scrape.
func New(lost LostFunc) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mntleak_events_total", Help: "Events read from the kernel, by kind.",
		}, []string{"kind"}),
		findings: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "mntleak_findings_total", Help: "Findings, by kind (failure, leak) and cause.",
		}, []string{"finding", "cause"}),
		leaksOpen: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mntleak_leaks_open", Help: "Leaks reported whose holder namespace is still alive.",
		}),
		namespaces: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mntleak_namespaces_tracked", Help: "Live mount namespaces in the lineage.",
		}),
		watched: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mntleak_namespaces_watched", Help: "Live mount namespaces whose tables the kernel's mount notes keep true (fanotify mount-namespace marks); the others are re-read when needed.",
		}),
		dead: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mntleak_namespaces_dead_kept", Help: "Dead mount namespaces kept for lineage (bounded, expire after the retention).",
		}),
		mounts: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mntleak_mounts_tracked", Help: "Mount entries held in the ledger's tables (bounded by the mount cap).",
		}),
		evicted: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "mntleak_tables_evicted", Help: "Mount tables evicted by the mount cap so far (re-read from /proc when needed).",
		}),
		latency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "mntleak_finding_latency_seconds",
			Help:    "From the failing (or leaking) syscall to its finding.",
			Buckets: []float64{.001, .002, .005, .01, .02, .05, .1, .25, .5, 1, 2.5},
		}),
	}
	m.enrichment = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mntleak_findings_enrichment_total",
		Help: "Findings by how their pod and container names were filled: ok, failed, timed_out, skipped.",
	}, []string{"result"})
	m.k8sEvents = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "mntleak_k8s_events_total",
		Help: "Kubernetes Events by result: posted, deduplicated, rate_limited, failed (an API call; each retry counts), no_pod.",
	}, []string{"result"})
	m.reg.MustRegister(m.enrichment, m.k8sEvents)
	m.reg.MustRegister(m.events, m.findings, m.leaksOpen, m.namespaces, m.watched, m.dead, m.mounts, m.evicted, m.latency,
		lostCollector{fn: lost, desc: prometheus.NewDesc("mntleak_events_lost_total",
			"Events the kernel could not put in the ring buffer, by kind.", []string{"kind"}, nil)},
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// CountsFunc returns counters by label value, read at every scrape.
type CountsFunc func() map[string]uint64

// SinkDrops registers mntleak_sink_dropped_total{sink}: lines or entries an
// output (stdout or an --output file, record, journal) dropped because it
// did not keep up.
// The counters live in the outputs; fn is read at every scrape.
func (m *Metrics) SinkDrops(fn CountsFunc) {
	m.reg.MustRegister(lostCollector{fn: LostFunc(fn), desc: prometheus.NewDesc("mntleak_sink_dropped_total",
		"Lines or journal entries dropped because the output did not keep up (the reader never waits for it), by sink.",
		[]string{"sink"}, nil)})
}

// Event counts one event. The counter of each kind is looked up once:
// WithLabelValues hashes and validates the label on every call, a cost the
// reader pays per event (5% of the daemon's CPU in a mount storm).
func (m *Metrics) Event(kind string) {
	if c, ok := m.eventCounters.Load(kind); ok {
		c.(prometheus.Counter).Inc()
		return
	}
	c := m.events.WithLabelValues(kind)
	m.eventCounters.Store(kind, c)
	c.Inc()
}

// Finding counts one finding whose call happened at callTime.
func (m *Metrics) Finding(finding, cause string, callTime time.Time) {
	m.findings.WithLabelValues(finding, cause).Inc()
	if !callTime.IsZero() {
		m.latency.Observe(time.Since(callTime).Seconds())
	}
}

// Enrichment counts one finding's enrichment result.
func (m *Metrics) Enrichment(result string) { m.enrichment.WithLabelValues(result).Inc() }

// K8sEvent counts one Kubernetes Event result.
func (m *Metrics) K8sEvent(result string) { m.k8sEvents.WithLabelValues(result).Inc() }

// State is the size of the correlator's state.
type State struct {
	OpenLeaks, Namespaces, DeadNamespaces, Mounts int
	Watched                                       int // of Namespaces
	Evicted                                       uint64
}

// SetState sets the gauges.
func (m *Metrics) SetState(s State) {
	m.leaksOpen.Set(float64(s.OpenLeaks))
	m.namespaces.Set(float64(s.Namespaces))
	m.watched.Set(float64(s.Watched))
	m.dead.Set(float64(s.DeadNamespaces))
	m.mounts.Set(float64(s.Mounts))
	m.evicted.Set(float64(s.Evicted))
}

// Handler serves the metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Serve serves /metrics on ln until ctx is done.
func (m *Metrics) Serve(ctx context.Context, ln net.Listener, log *zap.Logger) error {
	mux := http.NewServeMux()
	mux.Handle("/metrics", m.Handler())
	log.Info("serving metrics", zap.String(logkey.Addr, ln.Addr().String()))
	return serve(ctx, ln, mux, "metrics")
}

// ServePprof serves /debug/pprof/ (the daemon's own profiles) on ln until
// ctx is done: a listener of its own, on a loopback address only
// (PprofAddr), never the metrics one, since profiles show paths and
// command lines.
func ServePprof(ctx context.Context, ln net.Listener, log *zap.Logger) error {
	if tcp, ok := ln.Addr().(*net.TCPAddr); !ok || !tcp.IP.IsLoopback() {
		return fmt.Errorf("serve profiles on %s: not a loopback address", ln.Addr())
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	log.Info("serving profiles", zap.String(logkey.Addr, ln.Addr().String()))
	return serve(ctx, ln, mux, "profiles")
}

// serve runs an HTTP server on ln until ctx is done.
func serve(ctx context.Context, ln net.Listener, h http.Handler, what string) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve %s on %s: %w", what, ln.Addr(), err)
	}
	return nil
}

// ListenAddr validates a --metrics-addr value; a bare ":port" binds the
// loopback address, never every interface.
func ListenAddr(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil || port == "" || strings.ContainsAny(port, " /") {
		return "", fmt.Errorf("invalid --metrics-addr %q: want host:port or :port", s)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// PprofAddr validates a --pprof-addr value: a loopback address only
// (127.0.0.0/8, ::1 or localhost; a bare ":port" binds 127.0.0.1), since
// profiles show paths and command lines of the node.
func PprofAddr(s string) (string, error) {
	host, port, err := net.SplitHostPort(s)
	if err != nil || port == "" || strings.ContainsAny(port, " /") {
		return "", fmt.Errorf("invalid --pprof-addr %q: want 127.0.0.1:PORT", s)
	}
	switch host {
	case "", "localhost":
		host = "127.0.0.1"
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return "", fmt.Errorf("invalid --pprof-addr %q: profiles are served on a loopback address only (127.0.0.1:PORT; kubectl port-forward reaches it)", s)
	}
	return net.JoinHostPort(host, port), nil
}

// lostCollector exports counters kept elsewhere, one label.
type lostCollector struct {
	fn   LostFunc
	desc *prometheus.Desc
}

func (c lostCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c lostCollector) Collect(ch chan<- prometheus.Metric) {
	if c.fn == nil {
		return
	}
	for kind, n := range c.fn() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), kind)
	}
}

// Actions registers mntleak_actions_total{action,result}: the actions
// mntleak release took on this node (released, refused, failed, planned),
// as recorded in the state dir; fn is read at every scrape.
func (m *Metrics) Actions(fn func() map[[2]string]uint64) {
	m.reg.MustRegister(actionCollector{fn: fn, desc: prometheus.NewDesc("mntleak_actions_total",
		"Actions taken by mntleak release on this node, by action and result (from the state dir's record).",
		[]string{"action", "result"}, nil)})
}

type actionCollector struct {
	fn   func() map[[2]string]uint64
	desc *prometheus.Desc
}

func (c actionCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

func (c actionCollector) Collect(ch chan<- prometheus.Metric) {
	for k, n := range c.fn() {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.CounterValue, float64(n), k[0], k[1])
	}
}
