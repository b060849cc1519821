package kubetest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mntleak/mntleak/internal/kubeclient"
)

// Fault is what a call meets before the server answers it: a delay (cut
// short when the client gives up), then, with Code, an error Status of
// that code and reason, or with Abort a connection closed without an
// answer (as an unreachable server looks to the client).
type Fault struct {
	Delay  time.Duration
	Abort  bool
	Code   int
	Reason string
}

// Server is a fake API server.
type Server struct {
	*httptest.Server
	mu       sync.Mutex
	pods     []kubeclient.Pod
	events   []kubeclient.Event
	requests map[string]int // "verb resource" → count
	served   map[string]int // "verb resource" → answers written
	faults   map[string]func() Fault
}

// Start serves pods until the test ends.
func Start(t testing.TB, pods ...kubeclient.Pod) *Server {
	t.Helper()
	s := &Server{pods: pods, requests: map[string]int{}, served: map[string]int{}, faults: map[string]func() Fault{}}
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// Client is a kubeclient.Client for the server, made from a kubeconfig
// file as the daemon makes it.
func (s *Server) Client(t testing.TB) *kubeclient.Client {
	t.Helper()
	c, err := kubeclient.New(s.Kubeconfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// Kubeconfig writes a kubeconfig file for the server in a temporary
// directory and returns its path.
func (s *Server) Kubeconfig(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "`+s.URL+`"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Pod is a pod on node with one container "app" of the given runtime id.
func Pod(name, namespace, uid, node, containerID string) kubeclient.Pod {
	p := kubeclient.Pod{Metadata: kubeclient.ObjectMeta{Name: name, Namespace: namespace, UID: uid},
		Spec: kubeclient.PodSpec{NodeName: node}}
	if containerID != "" {
		p.Status.ContainerStatuses = []kubeclient.ContainerStatus{{Name: "app", Image: "busybox:1.36", ContainerID: "containerd://" + containerID}}
	}
	return p
}

// SetFault makes every following call of verb ("list", "get", "create",
// "patch") on resource ("pods", "events") meet f's Fault; nil removes it.
func (s *Server) SetFault(verb, resource string, f func() Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f == nil {
		delete(s.faults, verb+" "+resource)
		return
	}
	s.faults[verb+" "+resource] = f
}

// Requests is how many calls of verb on resource were made.
func (s *Server) Requests(verb, resource string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests[verb+" "+resource]
}

// Served is how many calls of verb on resource were answered (the answer
// written: a change made after it is not in it).
func (s *Server) Served(verb, resource string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.served[verb+" "+resource]
}

// DeletePod removes the pod with uid, as the API server forgets a pod
// once its deletion completes.
func (s *Server) DeletePod(uid string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pods = slices.DeleteFunc(s.pods, func(p kubeclient.Pod) bool { return p.Metadata.UID == uid })
}

// Events are the Events stored, in the order they were created.
func (s *Server) Events() []kubeclient.Event {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]kubeclient.Event(nil), s.events...)
}

// route is the verb and resource of a request, and the namespace and name
// it names ("" when none).
func route(r *http.Request) (verb, resource, namespace, name string) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case len(parts) == 3 && parts[0] == "api" && parts[2] == "pods":
		return "list", "pods", "", ""
	case len(parts) == 6 && parts[0] == "api" && parts[4] == "pods":
		return "get", "pods", parts[3], parts[5]
	case len(parts) == 6 && parts[0] == "apis" && parts[1] == "events.k8s.io" && parts[5] == "events":
		return map[string]string{http.MethodPost: "create", http.MethodGet: "list"}[r.Method], "events", parts[4], ""
	case len(parts) == 7 && parts[0] == "apis" && parts[1] == "events.k8s.io" && parts[5] == "events":
		return map[string]string{http.MethodPatch: "patch", http.MethodGet: "get"}[r.Method], "events", parts[4], parts[6]
	}
	return "", "", "", ""
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	verb, resource, namespace, name := route(r)
	s.mu.Lock()
	s.requests[verb+" "+resource]++
	fault := s.faults[verb+" "+resource]
	s.mu.Unlock()
	if fault != nil {
		f := fault()
		select {
		case <-time.After(f.Delay):
		case <-r.Context().Done():
			return
		}
		switch {
		case f.Abort:
			panic(http.ErrAbortHandler) // the connection closes with no answer
		case f.Code != 0:
			writeStatus(w, f.Code, f.Reason, "fault")
			return
		}
	}
	defer func() {
		s.mu.Lock()
		s.served[verb+" "+resource]++
		s.mu.Unlock()
	}()
	switch verb + " " + resource {
	case "list pods":
		node := strings.TrimPrefix(r.URL.Query().Get("fieldSelector"), "spec.nodeName=")
		var items []kubeclient.Pod
		s.mu.Lock()
		for _, p := range s.pods {
			if p.Spec.NodeName == node {
				items = append(items, p)
			}
		}
		s.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"kind": "PodList", "apiVersion": "v1", "items": items})
	case "get pods":
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, p := range s.pods {
			if p.Metadata.Namespace == namespace && p.Metadata.Name == name {
				writeJSON(w, http.StatusOK, p)
				return
			}
		}
		writeStatus(w, http.StatusNotFound, "NotFound", `pods "`+name+`" not found`)
	case "create events":
		s.create(w, r, namespace)
	case "patch events":
		s.patch(w, r, namespace, name)
	default:
		writeStatus(w, http.StatusNotFound, "NotFound", "the fake does not serve "+r.Method+" "+r.URL.Path)
	}
}

func (s *Server) create(w http.ResponseWriter, r *http.Request, namespace string) {
	var ev kubeclient.Event
	if b, err := io.ReadAll(r.Body); err != nil || json.Unmarshal(b, &ev) != nil || ev.Kind != "Event" ||
		ev.APIVersion != "events.k8s.io/v1" || ev.Metadata.Namespace != namespace {
		writeStatus(w, http.StatusBadRequest, "BadRequest", "not an events.k8s.io/v1 Event of namespace "+namespace)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, e := range s.events {
		if e.Metadata.Namespace == namespace && e.Metadata.Name == ev.Metadata.Name {
			writeStatus(w, http.StatusConflict, "AlreadyExists", `events.events.k8s.io "`+ev.Metadata.Name+`" already exists`)
			return
		}
	}
	s.events = append(s.events, ev)
	writeJSON(w, http.StatusCreated, ev)
}

func (s *Server) patch(w http.ResponseWriter, r *http.Request, namespace, name string) {
	var p struct {
		Series *kubeclient.EventSeries `json:"series"`
	}
	if b, err := io.ReadAll(r.Body); err != nil || r.Header.Get("Content-Type") != "application/merge-patch+json" ||
		json.Unmarshal(b, &p) != nil || p.Series == nil {
		writeStatus(w, http.StatusBadRequest, "BadRequest", "not a merge patch of an Event's series")
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := range s.events {
		if e := &s.events[i]; e.Metadata.Namespace == namespace && e.Metadata.Name == name {
			e.Series = p.Series
			writeJSON(w, http.StatusOK, e)
			return
		}
	}
	writeStatus(w, http.StatusNotFound, "NotFound", `events.events.k8s.io "`+name+`" not found`)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

func writeStatus(w http.ResponseWriter, code int, reason, message string) {
	writeJSON(w, code, map[string]any{"kind": "Status", "apiVersion": "v1", "status": "Failure",
		"reason": reason, "message": message, "code": code})
}
