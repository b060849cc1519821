// Package kubeevents posts findings as Kubernetes Events
// (events.k8s.io/v1, through client-go's tools/events broadcaster) where
// the engineer looks: `kubectl describe pod` and `kubectl get events`.
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
// and rate-limited (a token bucket); Post never waits (the broadcaster
// queues and sends on its own goroutines). The API server's failures are
// counted and logged once per outage, never fatal. Poster.Close, at exit,
// sends what was posted (waiting for the API calls still running, within
// a budget) before it shuts the broadcaster down, and says how many Events
// were not sent.
//
// Files:
//   - client.go: NewClient, from a kubeconfig or the in-cluster config.
//   - poster.go: Poster, what a finding posts, dedup and rate limit.
//   - sink.go: the sink between the broadcaster and the API: the node as
//     reportingInstance, failures counted and logged, the calls still
//     running or to be retried (for Close).
package kubeevents
