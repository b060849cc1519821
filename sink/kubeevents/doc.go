// Package kubeevents posts findings as Kubernetes Events
// (events.k8s.io/v1, through package kubeclient) where the engineer
// looks: `kubectl describe pod` and `kubectl get events`.
//
// A failure is a Warning with reason MountBusy on the stuck pod (the pod
// whose volume the failing path is), related to the holder pod; with no
// stuck pod, on the holder pod. A leak as it forms is a Warning with
// reason MountLeaked on the holder pod, related to the pod whose volume
// leaked, and on that pod too. The note is the finding's line, cut to the
// API's 1 KiB; reportingController is mntleak, reportingInstance the
// node's name.
//
// Events are deduplicated per (pod, holder, cause, reason) within a window
// and rate-limited (a token bucket); Post never waits (each Event is sent
// from a goroutine of its own). The Events are sent as client-go's
// tools/events broadcaster sent them, which the daemon used before
// (package kubeclient says why it no longer links client-go's clientset):
// an Event like one sent within six minutes (the same pods, reason and
// action, whatever the cause) counts in that Event's series (a patch of
// its count) instead of making a new one; an Event the server could not be
// reached for is tried 12 times, 10 s apart; one the server rejected is
// given up. The API server's failures are counted and logged once per
// outage, never fatal. Poster.Close, at exit, sends what was posted
// (waiting for the API calls still running, within a budget), stops the
// retries, and says how many Events were not sent.
//
// Files:
//   - poster.go: Poster, what a finding posts, dedup and rate limit.
//   - series.go: the recorder: a post's Event, its series, its tries.
//   - sink.go: the sink between the recorder and the API (EventAPI): the
//     node as reportingInstance, failures counted and logged, the calls
//     still running or to be retried (for Close).
package kubeevents
