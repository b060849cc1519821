// Package enrich adds to a finding what the container runtimes and the
// kubelet's paths tell about it, off the event path: the pod whose volume
// the object is (the stuck pod: from the path, then its name from the
// runtime or the API server), the container, image and pod of every
// process the finding names (also of the process behind an evidence
// event: the one that made the leaking mount or the holder namespace,
// asked about when its event arrived, so a pod deleted since is still
// named), and the node.
//
// The design: the correlator hands each finding to Enricher.Submit, on the
// event path, which only queues it. One goroutine fills it (Fill: every
// question under the finding's deadline, answers cached by package
// attribution) and then hands it on to be logged, counted and posted as a
// Kubernetes Event. A finding is never dropped and never waits on the
// event path: when the queue is full it is logged at once with what its
// paths tell, and its enrichment field says it was skipped; a lookup that
// fails or times out leaves the finding with what is known and says so in
// the same field.
//
// A replay must not ask live runtimes: the daemon records the settings and
// every answer in the stream (attribution.Recorder) and Replayer fills the
// replayed findings from those, in the same order, so `mntleak replay`
// prints the lines the daemon logged. A recording made without enrichment
// is replayed as it was.
//
// Files:
//   - fill.go: Config, Fill (one finding, synchronously).
//   - enricher.go: Enricher, the queue and its goroutine.
//   - warm.go: Warmer, the questions about an event's container and pod
//     asked as the event arrives (unrecorded: they only fill the cache),
//     so a finding names a process whose pod is gone by then.
//   - replay.go: Replayer, recorded answers applied to a replay.
package enrich
