// Package kubee2e runs the real mntleak daemon against a real single-node
// Kubernetes (k8slab) and checks what it says about the pod scenarios of
// issue 15: the finding's pod fields, cause, leaking event and fix, the
// same in the journal, and the Event read back from the API server with
// client-go. It holds tests only.
package kubee2e
