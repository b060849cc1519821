// Package daemon is mntleak's pipeline: it owns the wiring from the
// kernel's events to every output. cmd/mntleak parses flags into a Config
// and a LogConfig, opens the Log, and calls Run under a signal context.
//
// The event path, read top to bottom in pipeline.go, which holds every
// step taken per event: the tracer's reader hands each event to
// pipeline.handle, on one goroutine, in kernel order; it is prepared in
// one step (pipeline.prepare: correlate.Prepare, with the daemon's
// Sources: a failure's executable, a new namespace's birth id, the device
// a teardown call named, read from sysfs by package teardown; and the
// runtimes asked about its container and pod, and about the pod whose
// kubelet directory its path lies in), written to the record and
// the persistent lineage, printed when the filter selects it (stream,
// journal), given to the correlator once and counted. What the engine
// wants kept in the lineage besides (a FUSE server's exit) it hands back
// (correlate.Correlator.FUSEServerExits). No stage waits for an output:
// each slow output is a bounded queue with counted drops.
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
//   - pipeline.go: the event path: every step taken per event, with the
//     per-event calls into the stores it feeds (the lineage's append, the
//     findings' warm).
//   - mountwatch.go: the kernel's mount notes (fanotify mount-namespace
//     marks, Linux 6.15+): fanotify groups of up to 16 watched namespaces
//     under one epoll, each namespace knowing its mounts by unique id
//     (mountwatch_mounts.go: a set sorted by unique id, 32 bytes a
//     mount, the points shared between namespaces), marked through a process
//     the lineage knows in it or one of the tracer's tasks, and marked
//     again when the lineage has a new namespace under its inode (the
//     kernel reuses a dead one's); mountwatch_notes.go: the notes read
//     from the groups (an attach described by statmount in the member
//     it is in, a detach as its namespace knew the mount);
//     mountwatch_info.go: an
//     attached mount as mountinfo shows it; mountnotes.go: the
//     pipeline's use of it: the notes queued so far recorded and applied
//     before each event (a syscall's event stamped before the last
//     drain began needs none: its notes were in it), the watched
//     namespaces kept to the live ones,
//     and exits made quiet while the notes run (quietExits: an exit's
//     record waits for the reader's next wakeup) (--mount-notes; without
//     the marks the tables are re-read as before, and every exit wakes
//     the reader).
//   - sources.go: Sources, the answers the engine is given before an
//     event is recorded (correlate.Sources); the live test harnesses that
//     drive a correlator of their own prepare events with it too;
//     cgroups.go: the cgroups it read, kept while the kernel's count of
//     cgroup changes stands still (tracer.CgroupChanges).
//   - sinks.go: the event stream, the record and their exit budget.
//   - log.go: the logger on a queue in front of stderr, teed with the
//     journal; findings are never dropped from it.
//   - lineage.go: the persistent lineage (--state-dir) of a running
//     daemon: opened, fed back to the correlator, flushed and closed.
//   - findings.go: a finding after the correlator: the runtimes and API
//     server asked (package attribution), the enricher, the log line,
//     the metrics and the Kubernetes Events (package kubeevents).
//
// Use correlate.Replay, not this package, to explain a recorded stream:
// Run needs root and BPF.
package daemon
