// Package kubeclient is the daemon's client of the Kubernetes API server:
// the three calls mntleak makes (list the pods bound to a node, get one
// pod, create an events.k8s.io/v1 Event and patch its series) as plain
// HTTP requests with JSON bodies, decoded into types that hold only the
// fields mntleak reads.
//
// It replaces client-go's Clientset, whose scheme registers the types of
// every API group at start-up (the daemon's binary was 77 MB, 37 of them
// client-go and k8s.io/api; their init took a third of the start-up and
// their pages a third of the resident memory). Configuration and transport
// stay client-go's rest and clientcmd packages, which bring no API types:
// a kubeconfig file (its exec plugins, client certificates, tokens) or the
// in-cluster config (the ServiceAccount token, re-read as it rotates, and
// CA), TLS and authentication as before.
//
// Files:
//   - client.go: Client, New from a kubeconfig or the in-cluster config,
//     the request and the API server's Status as an error (StatusError,
//     IsNotFound, IsAlreadyExists).
//   - types.go: Pod, Event and what they hold, MicroTime.
//   - calls.go: ListPodsOnNode, GetPod, CreateEvent, PatchEventSeries.
package kubeclient
