package kubeclient_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/internal/kubeclient"
	"github.com/mntleak/mntleak/internal/kubeclient/kubetest"
)

// TestCalls: each call's request as the API server reads it, and its
// answer decoded; an unknown pod is NotFound.
func TestCalls(t *testing.T) {
	api := kubetest.Start(t, kubetest.Pod("web", "shop", "u1", "node-1", "c1"), kubetest.Pod("db", "shop", "u2", "node-2", "c2"))
	c := api.Client(t)
	ctx := context.Background()
	pods, err := c.ListPodsOnNode(ctx, "node-1")
	if err != nil || len(pods) != 1 || pods[0].Metadata.UID != "u1" || pods[0].Status.ContainerStatuses[0].ContainerID != "containerd://c1" {
		t.Fatalf("ListPodsOnNode = %+v, %v", pods, err)
	}
	if p, err := c.GetPod(ctx, "shop", "db"); err != nil || p.Metadata.UID != "u2" || p.Spec.NodeName != "node-2" {
		t.Errorf("GetPod(shop/db) = %+v, %v", p, err)
	}
	if _, err := c.GetPod(ctx, "shop", "gone"); !kubeclient.IsNotFound(err) || kubeclient.IsAlreadyExists(err) {
		t.Errorf("GetPod(shop/gone): %v, want NotFound", err)
	}
	at := time.Date(2026, 11, 26, 8, 0, 0, 123456789, time.UTC)
	ev := &kubeclient.Event{Metadata: kubeclient.ObjectMeta{Name: "web.1", Namespace: "shop"}, EventTime: kubeclient.MicroTime{Time: at},
		Reason: "MountBusy", Type: kubeclient.EventTypeWarning, Regarding: kubeclient.ObjectReference{Kind: "Pod", Name: "web", Namespace: "shop", UID: "u1"}}
	if _, err := c.CreateEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if _, err := c.CreateEvent(ctx, ev); !kubeclient.IsAlreadyExists(err) {
		t.Errorf("the same Event again: %v, want AlreadyExists", err)
	}
	s := kubeclient.EventSeries{Count: 2, LastObservedTime: kubeclient.MicroTime{Time: at.Add(time.Second)}}
	if _, err := c.PatchEventSeries(ctx, "shop", "web.1", s); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PatchEventSeries(ctx, "shop", "web.2", s); !kubeclient.IsNotFound(err) {
		t.Errorf("patch of an Event the server does not have: %v, want NotFound", err)
	}
	got := api.Events()
	if len(got) != 1 || got[0].Series == nil || got[0].Series.Count != 2 || !got[0].EventTime.Equal(at.Truncate(time.Microsecond)) ||
		got[0].Regarding.UID != "u1" {
		t.Errorf("Events in the API: %+v", got)
	}
	if n := api.Requests("list", "pods"); n != 1 {
		t.Errorf("%d pod lists, want 1", n)
	}
}

// TestWire: the bytes of a create and a patch (the API server's own
// field names, the time with microseconds, apiVersion and kind set), the
// node selector escaped, a server under a path prefix, over TLS with the
// kubeconfig's CA and token (clientcmd reads no credentials for http).
func TestWire(t *testing.T) {
	var bodies, paths []string
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		bodies = append(bodies, string(b))
		paths = append(paths, r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("Authorization"))
		_, _ = io.WriteString(w, `{}`)
	}))
	defer srv.Close()
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	c := clientFor(t, srv.URL+"/k8s/clusters/c-1", "certificate-authority-data: "+base64.StdEncoding.EncodeToString(ca)+", ")
	ctx := context.Background()
	at := time.Date(2026, 11, 26, 8, 0, 0, 123456789, time.UTC)
	ev := &kubeclient.Event{Metadata: kubeclient.ObjectMeta{Name: "web.1", Namespace: "shop", ResourceVersion: "9"}, EventTime: kubeclient.MicroTime{Time: at},
		ReportingController: "mntleak", ReportingInstance: "node-1", Action: "Teardown", Reason: "MountBusy", Note: "held",
		Type: kubeclient.EventTypeWarning, Regarding: kubeclient.ObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", Namespace: "shop", UID: "u1"}}
	if _, err := c.CreateEvent(ctx, ev); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PatchEventSeries(ctx, "shop", "web.1", kubeclient.EventSeries{Count: 3, LastObservedTime: kubeclient.MicroTime{Time: at}}); err != nil {
		t.Fatal(err)
	}
	if _, err := c.ListPodsOnNode(ctx, "a,b=c"); err != nil {
		t.Fatal(err)
	}
	wantBodies := []string{
		`{"apiVersion":"events.k8s.io/v1","kind":"Event","metadata":{"name":"web.1","namespace":"shop"},"eventTime":"2026-11-26T08:00:00.123456Z",` +
			`"reportingController":"mntleak","reportingInstance":"node-1","action":"Teardown","reason":"MountBusy",` +
			`"regarding":{"kind":"Pod","namespace":"shop","name":"web","uid":"u1","apiVersion":"v1"},"note":"held","type":"Warning"}`,
		`{"series":{"count":3,"lastObservedTime":"2026-11-26T08:00:00.123456Z"}}`,
		``,
	}
	wantPaths := []string{
		"POST /k8s/clusters/c-1/apis/events.k8s.io/v1/namespaces/shop/events application/json Bearer t",
		"PATCH /k8s/clusters/c-1/apis/events.k8s.io/v1/namespaces/shop/events/web.1 application/merge-patch+json Bearer t",
		"GET /k8s/clusters/c-1/api/v1/pods?fieldSelector=spec.nodeName%3Da%5C%2Cb%5C%3Dc  Bearer t",
	}
	if strings.Join(bodies, "\n") != strings.Join(wantBodies, "\n") || strings.Join(paths, "\n") != strings.Join(wantPaths, "\n") {
		t.Errorf("requests:\n%s\n%s\nwant:\n%s\n%s", strings.Join(paths, "\n"), strings.Join(bodies, "\n"),
			strings.Join(wantPaths, "\n"), strings.Join(wantBodies, "\n"))
	}
}

// clientFor is a client of server through a kubeconfig with token t and
// the cluster's other fields (YAML flow-mapping entries, each ending in
// ", ").
func clientFor(t *testing.T, server, cluster string) *kubeclient.Client {
	t.Helper()
	path := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(path, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {`+cluster+`server: "`+server+`"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := kubeclient.New(path)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestErrors: a server's Status is a StatusError naming the request; an
// answer that is not JSON is said; a bad kubeconfig and a missing
// in-cluster config are one clear error each.
func TestErrors(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/api/v1/namespaces/shop/pods/") {
			w.WriteHeader(http.StatusForbidden)
			_ = json.NewEncoder(w).Encode(map[string]any{"kind": "Status", "reason": "Forbidden", "message": "no", "code": 403})
			return
		}
		_, _ = io.WriteString(w, `<html>`)
	}))
	defer srv.Close()
	c := clientFor(t, srv.URL, "")
	_, err := c.GetPod(context.Background(), "shop", "web")
	var se *kubeclient.StatusError
	if !errorsAs(err, &se) || se.Code != 403 || se.Reason != "Forbidden" || kubeclient.IsNotFound(err) ||
		err.Error() != "GET /api/v1/namespaces/shop/pods/web: 403 Forbidden: no" {
		t.Errorf("a refusal: %v", err)
	}
	if _, err := c.ListPodsOnNode(context.Background(), "n"); err == nil || !strings.Contains(err.Error(), "GET /api/v1/pods: decode the answer") {
		t.Errorf("an answer not JSON: %v", err)
	}
	bad := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(bad, []byte("clusters: ["), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := kubeclient.New(bad); err == nil || !strings.HasPrefix(err.Error(), "kubeconfig "+bad+": ") {
		t.Errorf("a bad kubeconfig: %v", err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	if _, err := kubeclient.New(""); err == nil || !strings.HasPrefix(err.Error(), "in-cluster config (give --kubeconfig outside a pod): ") {
		t.Errorf("no in-cluster config: %v", err)
	}
}

func errorsAs(err error, target **kubeclient.StatusError) bool { return errors.As(err, target) }
