package daemon

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/attribution/cri"
	"github.com/mntleak/mntleak/attribution/docker"
	"github.com/mntleak/mntleak/attribution/kubeapi"
	"github.com/mntleak/mntleak/enrich"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/internal/kubeclient"
	"github.com/mntleak/mntleak/internal/logkey"
	"github.com/mntleak/mntleak/sink/kubeevents"
	"github.com/mntleak/mntleak/sink/output"
	"github.com/mntleak/mntleak/state"
	"github.com/mntleak/mntleak/stream"
)

// enrichCloseBudget is how long the findings still queued for enrichment
// may take at exit, within the exit budget; then they are logged with what
// is known.
const enrichCloseBudget = 500 * time.Millisecond

// eventsCloseBudget is how long the Kubernetes Events posted before exit
// (the findings enrichment logged last among them) may take to reach the
// API server; then they are counted as not sent and said in one line.
const eventsCloseBudget = time.Second

// findings is the path of a finding after the correlator, off the event
// path: enriched (the runtimes, the kubelet's paths, the API server), then
// logged, counted and posted as Kubernetes Events.
type findings struct {
	enricher *enrich.Enricher
	// warmer asks about the container and pod of an event's process when
	// the event arrives, so a finding names them once they are gone.
	warmer *enrich.Warmer
	// kubeletRoot is the kubelet's --root-dir: an event's path under its
	// pods/<uid>/ names the pod warm asks about.
	kubeletRoot string
	closers     []func()
}

// openFindings sets up the runtimes asked, the API client, the Event
// poster and the enricher; the enricher runs until close.
func openFindings(ctx context.Context, cfg Config, p *pipeline, log *zap.Logger) (*findings, error) {
	ecfg := enrich.Config{Node: cfg.NodeName, KubeletRoot: cfg.KubeletRoot}.Defaults()
	fs := &findings{kubeletRoot: ecfg.KubeletRoot}
	sources, client, err := fs.openSources(cfg)
	if err != nil {
		return nil, err
	}
	resolver := attribution.NewResolver(attribution.Options{Timeout: cfg.RuntimeTimeout}, sources...)
	var lookup attribution.Lookup = resolver
	var record func(*attribution.Record)
	if rec := p.sinks.rec; rec != nil {
		record = func(r *attribution.Record) { p.fail(rec.WriteJSON(stream.AttributionLine{Attribution: r})) }
		lookup = attribution.Recorder{Lookup: resolver, Write: record}
	}
	var poster *kubeevents.Poster
	if cfg.K8sEvents {
		if poster, err = fs.openPoster(ctx, cfg, client, p, log.Named("events")); err != nil {
			return nil, err
		}
	}
	log.Named("attribution").Info("naming containers and pods", zap.String(logkey.CRISocket, strings.Join(cfg.CRISockets, ",")),
		zap.String(logkey.Socket, cfg.DockerSocket), zap.Bool(logkey.Kubeconfig, cfg.Kube), zap.String(logkey.Node, cfg.NodeName),
		zap.Bool(logkey.K8sEvents, cfg.K8sEvents))
	fs.enricher = enrich.New(ecfg, lookup, record, findingOut(cfg, p, poster, log.Named("correlate")))
	fs.enricher.Start()
	if len(sources) > 0 {
		// The resolver itself, not the recorder: a finding's question is
		// recorded when it is asked, answered from the cache.
		fs.warmer = enrich.NewWarmer(resolver, cfg.RuntimeTimeout, 0)
		fs.warmer.Start()
	}
	return fs, nil
}

// openSources makes the clients of the runtimes asked (closed by fs's
// close) and of the API server: the sources that name a finding's
// containers and pods.
func (fs *findings) openSources(cfg Config) ([]attribution.Source, *kubeclient.Client, error) {
	var sources []attribution.Source
	if len(cfg.CRISockets) > 0 {
		s := cri.New(cfg.CRISockets...)
		sources = append(sources, s)
		fs.closers = append(fs.closers, func() { _ = s.Close() }) //nolint:errcheck // at exit, nothing to do about it
	}
	if cfg.DockerSocket != "" {
		s := docker.New(cfg.DockerSocket)
		sources = append(sources, s)
		fs.closers = append(fs.closers, s.Close)
	}
	var client *kubeclient.Client
	if cfg.Kube {
		var err error
		if client, err = kubeclient.New(cfg.Kubeconfig); err != nil {
			return nil, nil, err
		}
		sources = append(sources, kubeapi.New(client, cfg.NodeName))
	}
	return sources, client, nil
}

// openPoster starts the poster of Kubernetes Events; fs's close stops it
// after the enricher's (close runs the closers then): the findings the
// enricher logs at exit are posted too.
func (fs *findings) openPoster(ctx context.Context, cfg Config, client *kubeclient.Client, p *pipeline, elog *zap.Logger) (*kubeevents.Poster, error) {
	count := func(string) {}
	if p.mets != nil {
		count = p.mets.K8sEvent
	}
	poster, err := kubeevents.New(ctx, client, kubeevents.Options{Node: cfg.NodeName, Count: count}, elog)
	if err != nil {
		return nil, err
	}
	fs.closers = append(fs.closers, func() {
		if n := poster.Close(eventsCloseBudget); n > 0 {
			elog.Warn("Kubernetes Events not sent before exit", zap.Int(logkey.Unsent, n), zap.Duration(logkey.Waited, eventsCloseBudget))
		}
	})
	return poster, nil
}

// findingOut is where an enriched finding goes: a person's terminal, the
// log, the state dir (for mntleak release --finding ID), the metrics and
// the Event poster (nil: none). It runs on the enricher's goroutine, and
// on the event path for a finding skipped because the queue is full: the
// findings file is written under a lock.
func findingOut(cfg Config, p *pipeline, poster *kubeevents.Poster, flog *zap.Logger) func(*finding.Finding) {
	var keep struct {
		sync.Mutex
		warned bool
	}
	return func(f *finding.Finding) {
		if people := p.sinks.people; people != nil {
			// A person's terminal: the short form on stdout (the log on
			// stderr leaves it out, the journal has it).
			if err := people.WriteFinding(f); err != nil {
				flog.Warn("write a finding to stdout", zap.Error(err))
			}
		}
		flog.Log(output.FindingLevel(f), f.Line(), output.FindingFields(f)...)
		// Kept for mntleak release --finding ID.
		if dir := cfg.StateDir; dir != "" {
			b, err := json.Marshal(f)
			keep.Lock()
			if err == nil {
				err = state.AppendFinding(dir, f.ID(), b)
			}
			if err != nil && !keep.warned {
				keep.warned = true
				flog.Warn("keep findings in the state dir", zap.Error(err))
			}
			keep.Unlock()
		}
		if p.mets != nil {
			p.mets.Finding(string(f.Kind), f.Cause.String(), f.Call.Time)
			p.mets.Enrichment(enrich.Result(f))
		}
		if poster != nil {
			poster.Post(f)
		}
	}
}

// submit hands a finding on; it never waits.
func (fs *findings) submit(f *finding.Finding) { fs.enricher.Submit(f) }

// close logs the findings still queued (within enrichCloseBudget) and
// closes the runtimes' connections. Safe to call twice.
func (fs *findings) close() {
	if fs == nil {
		return
	}
	if fs.warmer != nil {
		fs.warmer.Close()
	}
	fs.enricher.Close(enrichCloseBudget)
	for _, c := range fs.closers {
		c()
	}
	fs.closers = nil
}
