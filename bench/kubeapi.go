package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"
)

// fakeAPIServer is an API server for the daemon's Kubernetes naming and
// Events: it knows no pod (the benchmark's holders are no pod's) and
// takes every Event. Enough for the daemon to run with naming on as in a
// cluster: the API client made, the pod source asked, the poster running.
type fakeAPIServer struct {
	srv        *http.Server
	done       chan struct{}
	Kubeconfig string // a kubeconfig file for it, in the work directory
}

func startFakeAPIServer(dir string) (*fakeAPIServer, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("fake API server: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/pods", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"PodList","apiVersion":"v1","items":[]}`)
	})
	mux.HandleFunc("POST /apis/events.k8s.io/v1/namespaces/{ns}/events", func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		_, _ = w.Write(b)
	})
	a := &fakeAPIServer{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}, done: make(chan struct{}),
		Kubeconfig: filepath.Join(dir, "kubeconfig")}
	if err := os.WriteFile(a.Kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: bench, cluster: {server: "http://`+ln.Addr().String()+`"}}]
users: [{name: bench, user: {}}]
contexts: [{name: bench, context: {cluster: bench, user: bench}}]
current-context: bench
`), 0o600); err != nil {
		_ = ln.Close()
		return nil, fmt.Errorf("fake API server's kubeconfig: %w", err)
	}
	go func() {
		defer close(a.done)
		if err := a.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			fmt.Fprintf(os.Stderr, "fake API server: %v\n", err)
		}
	}()
	return a, nil
}

func (a *fakeAPIServer) close() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = a.srv.Shutdown(ctx)
	<-a.done
}
