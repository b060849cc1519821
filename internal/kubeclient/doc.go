// Package kubeclient is the daemon's client of the Kubernetes API server:
// the three calls mntleak makes (list the pods bound to a node, get one
// pod, create an events.k8s.io/v1 Event and patch its series) as plain
// HTTP requests with JSON bodies, decoded into types that hold only the
// fields mntleak reads.
//
// It replaces client-go's Clientset, whose scheme registers the types of
// every API group at start-up (the daemon's binary was 77 MB, 37 of them
// client-go and k8s.io/api; their init took a third of the start-up and
// their pages a third of the resident memory). Its configuration is its
// own too: client-go's rest and clientcmd packages brought some 6 MB more
// (apimachinery's runtime and serializers, json-iterator, cbor), for
// what takes a few hundred lines here.
//
// New reads a kubeconfig file (YAML or JSON, the context named by its
// current-context, paths relative to the file's directory, as clientcmd)
// or, with no file, the in-cluster config (KUBERNETES_SERVICE_HOST and
// _PORT, the ServiceAccount's token and CA). The cluster gives the server
// (a path prefix kept), its CA (a file or data), tls-server-name,
// insecure-skip-tls-verify, proxy-url. The user gives a client
// certificate (files or data), a token or tokenFile, a username and
// password, or an exec plugin (client.authentication.k8s.io/v1 or
// v1beta1: its ExecCredential kept until it expires or the server
// answers 401, each run bound by the request's timeout). auth-provider
// (client-go's removed gcp, azure and oidc plugins) and impersonation are
// errors. As with clientcmd, an http:// server gets no credentials.
// Files that rotate (a bound ServiceAccount token, a kubelet's client
// certificate, a CA) are read again at a request once the last read is a
// minute old; a client certificate that changed closes the idle
// connections made with the old one. Transport is a clone of net/http's
// default (the environment's proxy, HTTP/2).
//
// Files:
//   - client.go: Client, New from a kubeconfig or the in-cluster config
//     (newClient with New's setup; a test gives its own), the request and
//     the API server's Status as an error (StatusError, IsNotFound,
//     IsAlreadyExists).
//   - config.go: setup (the ServiceAccount directory and the reload
//     period, passed down from newClient; standardSetup is New's), config
//     (server, TLS and credentials to use), the in-cluster config,
//     reloaded (a file read again as it changes).
//   - kubeconfig.go: a kubeconfig file read into a config.
//   - exec.go: exec plugins: their ExecCredential asked for, read and
//     kept until it expires.
//   - transport.go: the transport of a config: TLS (a CA file re-read),
//     the credentials of each request.
//   - types.go: Pod, Event and what they hold, MicroTime.
//   - calls.go: ListPodsOnNode, GetPod, CreateEvent, PatchEventSeries.
package kubeclient
