package kubeclient

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
)

// defaultServiceAccountDir holds the pod's ServiceAccount token and the
// cluster's CA.
const defaultServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount"

// defaultReloadPeriod is how long a file read for each request (a token
// file, client certificate files, a CA file) is used before it is read
// again: bound ServiceAccount tokens rotate (the kubelet writes a new one
// at 80% of its life, an hour by default), kubelet client certificates
// are renewed in place. client-go re-reads token files once a minute too.
const defaultReloadPeriod = time.Minute

// setup is what a client is made with besides its kubeconfig: New's are
// the standard ones, a test gives its own (a ServiceAccount directory of
// the test, a shorter period).
type setup struct {
	serviceAccountDir string        // of the in-cluster config
	reloadPeriod      time.Duration // how long a file read is used
}

// standardSetup is the setup New makes clients with.
func standardSetup() setup {
	return setup{serviceAccountDir: defaultServiceAccountDir, reloadPeriod: defaultReloadPeriod}
}

// config is where a client connects and how it authenticates: the
// current context of a kubeconfig file, or the in-cluster config.
type config struct {
	source string // "kubeconfig PATH" or "in-cluster config", in errors at request time
	server *url.URL

	// TLS, for an https server.
	cluster    string // `cluster "NAME"` in errors
	caFile     string // re-read as it changes
	caData     []byte // PEM
	insecure   bool
	serverName string
	proxy      *url.URL // nil: the proxy of the environment

	// reloadPeriod is how long a file read (token, client certificate,
	// CA) is used before it is read again.
	reloadPeriod time.Duration

	// Authentication, sent to an https server only (as clientcmd does).
	user               string // `user "NAME"` in errors
	token, tokenFile   string // a token file wins and is re-read as it changes
	username, password string
	certFile, keyFile  string // re-read as they change
	certData, keyData  []byte // PEM; data wins over a file
	exec               *execConfig
	execCluster        *execCluster // the cluster given to an exec plugin that asks for it
}

// inCluster is the config of a pod: the API server's Service from the
// environment the kubelet sets, the ServiceAccount's token (re-read as it
// rotates) and the cluster's CA, both in dir.
func inCluster(dir string) (*config, error) {
	host, port := os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")
	if host == "" || port == "" {
		return nil, errors.New("KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not both set")
	}
	return &config{
		source:    "in-cluster config",
		server:    &url.URL{Scheme: "https", Host: net.JoinHostPort(host, port)},
		cluster:   "ServiceAccount",
		caFile:    filepath.Join(dir, "ca.crt"),
		user:      "ServiceAccount",
		tokenFile: filepath.Join(dir, "token"),
	}, nil
}

// reloaded is what a file holds, read again when it is older than the
// period; the value stays the same (and the same pointer) while the
// file's bytes do.
type reloaded[T any] struct {
	read   func() ([]byte, error) // the file's bytes (or files'), the error naming it
	parse  func([]byte) (T, error)
	period time.Duration

	mu  sync.Mutex
	raw []byte
	val T
	at  time.Time // of the last read; zero before the first
}

// get returns the value, reading the file again first when the last read
// is a period old. A file that cannot be read or parsed is an error (the
// request fails, and the next one reads it again).
func (r *reloaded[T]) get() (T, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.at.IsZero() && time.Since(r.at) < r.period {
		return r.val, nil
	}
	raw, err := r.read()
	if err != nil {
		var zero T
		return zero, err
	}
	if r.at.IsZero() || !bytes.Equal(raw, r.raw) {
		v, err := r.parse(raw)
		if err != nil {
			var zero T
			return zero, err
		}
		r.val, r.raw = v, raw
	}
	r.at = time.Now()
	return r.val, nil
}

// readFile is a file's bytes, the error saying whose file (what) it is.
func readFile(where, what, path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%s: read %s %s: %w", where, what, path, err)
	}
	return b, nil
}

// tokenFrom reads a token file: its text without surrounding space, not
// empty; read again when a period old.
func tokenFrom(where, path string, period time.Duration) *reloaded[string] {
	return &reloaded[string]{
		read:   func() ([]byte, error) { return readFile(where, "tokenFile", path) },
		period: period,
		parse: func(b []byte) (string, error) {
			tok := strings.TrimSpace(string(b))
			if tok == "" {
				return "", fmt.Errorf("%s: tokenFile %s is empty", where, path)
			}
			return tok, nil
		},
	}
}
