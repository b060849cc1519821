// Package kubetest is a fake Kubernetes API server for tests: an
// httptest server that answers the calls of package kubeclient (list a
// node's pods, get a pod, create an Event and merge-patch its series),
// keeps the Events it was sent, counts the requests by verb and resource,
// and fails or delays a call as a test asks (Fault).
//
// Files: server.go (Server, Fault; DeletePod, Served).
package kubetest
