package main

import (
	"flag"
	"os"
)

// serviceAccountToken is where a pod's ServiceAccount token is mounted
// (the in-cluster config reads it).
const serviceAccountToken = "/var/run/secrets/kubernetes.io/serviceaccount/token"

// eventsByDefault settles --k8s-events when it was not given: Events are
// on wherever the API server can be reached, with --kubeconfig or in a pod
// with the in-cluster config (the kubernetes Service's environment and a
// ServiceAccount token), and need a node name. Given explicitly, the flag
// stands (--k8s-events=false turns Events off; --k8s-events outside a
// pod and without --kubeconfig fails when the client is made, as asked).
func eventsByDefault(fs *flag.FlagSet, kubeconfig, node string) (on, explicit bool) {
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "k8s-events" {
			explicit = true
		}
	})
	if explicit {
		return false, true
	}
	return node != "" && (kubeconfig != "" || inCluster()), false
}

// inCluster reports whether the in-cluster config can be made: the
// kubernetes Service's environment and the ServiceAccount's token.
func inCluster() bool {
	if os.Getenv("KUBERNETES_SERVICE_HOST") == "" || os.Getenv("KUBERNETES_SERVICE_PORT") == "" {
		return false
	}
	_, err := os.Stat(serviceAccountToken)
	return err == nil
}
