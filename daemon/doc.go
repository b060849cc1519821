// Package daemon is mntleak's pipeline: it owns the wiring from the
// kernel's events to every output. cmd/mntleak parses flags into a Config
// and a LogConfig, opens the Log, and calls Run under a signal context.
//
// The event path, read top to bottom in pipeline.go: the tracer's reader
// hands each event to pipeline.handle, on one goroutine, in kernel order;
// it is prepared in one step (correlate.Prepare, with the daemon's
// Sources: a failure's executable, a new namespace's birth id, the device
// a teardown call named, read from sysfs by package teardown), written to
// the record and the persistent lineage (every event), printed when the
// filter selects it (stream, journal), given to the correlator and
// counted. No stage waits for an output: each slow output is a bounded
// queue with counted drops.
// The correlator's findings leave the event path at once: they are
// queued, enriched with pod and container names, then logged, counted and
// posted as Kubernetes Events on a goroutine of their own (findings.go,
// package enrich).
//
// Files:
//   - config.go: Config, LogConfig and the journal modes.
//   - daemon.go: Run, the set-up order (outputs, metrics, profiles on a
//     loopback listener of their own when asked, tracer, lineage,
//     startup snapshot, read loop) and the hand-off of the tracer to the
//     metrics goroutine.
//   - pipeline.go: the event path.
//   - sources.go: Sources, the answers the engine is given before an
//     event is recorded (correlate.Sources); the live test harnesses that
//     drive a correlator of their own prepare events with it too.
//   - sinks.go: the event stream, the record and their exit budget.
//   - log.go: the logger on a queue in front of stderr, teed with the
//     journal; findings are never dropped from it.
//   - lineage.go: the persistent lineage (--state-dir) of a running daemon.
//   - findings.go: a finding after the correlator: the runtimes and API
//     server asked (package attribution), the enricher, the log line,
//     the metrics and the Kubernetes Events (package kubeevents).
//
// Use correlate.Replay, not this package, to explain a recorded stream:
// Run needs root and BPF.
package daemon
