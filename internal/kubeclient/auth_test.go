package kubeclient

import (
	"encoding/base64"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestBearerToken: a token, or username and password, go in each request's
// Authorization (a token and a password both are refused).
func TestBearerToken(t *testing.T) {
	s := startAPI(t, nil)
	dir := t.TempDir()
	cluster := map[string]any{"server": s.URL, "certificate-authority-data": base64.StdEncoding.EncodeToString(s.caPEM())}
	if err := getPod(t, writeKubeconfig(t, dir, cluster, map[string]any{"token": "tok-1"})); err != nil || s.last() != "Bearer tok-1||mntleak" {
		t.Errorf("token: %v, server saw %q", err, s.last())
	}
	if err := getPod(t, writeKubeconfig(t, dir, cluster, map[string]any{"username": "ann", "password": "pw"})); err != nil ||
		s.last() != "Basic "+base64.StdEncoding.EncodeToString([]byte("ann:pw"))+"||mntleak" {
		t.Errorf("basic auth: %v, server saw %q", err, s.last())
	}
	path := writeKubeconfig(t, dir, cluster, map[string]any{"token": "tok-1", "username": "ann", "password": "pw"})
	if _, err := New(path); err == nil || !strings.HasPrefix(err.Error(), "kubeconfig "+path+`: user "u": a token and a username/password`) {
		t.Errorf("a token and a password: %v", err)
	}
}

// TestTokenFileRotation: a tokenFile (relative to the kubeconfig's
// directory) is read at New (missing, an error) and again when its period
// is over: a client of the default period (a minute) still sends the old
// token after the file changes, one of a shorter period the new one.
func TestTokenFileRotation(t *testing.T) {
	s := startAPI(t, nil)
	dir := t.TempDir()
	cluster := map[string]any{"server": s.URL, "certificate-authority-data": base64.StdEncoding.EncodeToString(s.caPEM())}
	path := writeKubeconfig(t, dir, cluster, map[string]any{"tokenFile": "token"})
	if _, err := New(path); err == nil || !strings.HasPrefix(err.Error(), "kubeconfig "+path+`: user "u": read tokenFile `+filepath.Join(dir, "token")+": ") {
		t.Errorf("no token file: %v", err)
	}
	writeFile(t, filepath.Join(dir, "token"), []byte("tok-1\n"))
	minute, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	short, err := newClient(path, setup{serviceAccountDir: defaultServiceAccountDir, reloadPeriod: 0})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []*Client{minute, short} {
		if err := get(c); err != nil || s.last() != "Bearer tok-1||mntleak" {
			t.Errorf("token file: %v, server saw %q", err, s.last())
		}
	}
	writeFile(t, filepath.Join(dir, "token"), []byte("tok-2"))
	if err := get(minute); err != nil || s.last() != "Bearer tok-1||mntleak" {
		t.Errorf("token file rewritten, read a minute ago: %v, server saw %q", err, s.last())
	}
	if err := get(short); err != nil || s.last() != "Bearer tok-2||mntleak" {
		t.Errorf("token file rewritten, a period past: %v, server saw %q", err, s.last())
	}
	writeFile(t, filepath.Join(dir, "token"), nil)
	if err := get(short); err == nil || !strings.Contains(err.Error(), `kubeconfig `+path+`: user "u": tokenFile `+filepath.Join(dir, "token")+" is empty") {
		t.Errorf("token file emptied: %v", err)
	}
}

// inClusterAt points the in-cluster config's Service at s and returns a
// ServiceAccount directory of the test (empty).
func inClusterAt(t *testing.T, s *apiServer) string {
	t.Helper()
	dir := t.TempDir()
	u, err := url.Parse(s.URL)
	if err != nil {
		t.Fatal(err)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("KUBERNETES_SERVICE_HOST", host)
	t.Setenv("KUBERNETES_SERVICE_PORT", port)
	return dir
}

// TestInCluster: the Service from the environment (an IPv6 host in
// brackets), the ServiceAccount's token re-read as it rotates, the CA
// file; a missing token or CA is an error of New.
func TestInCluster(t *testing.T) {
	s := startAPI(t, nil)
	dir := inClusterAt(t, s)
	sa := setup{serviceAccountDir: dir, reloadPeriod: defaultReloadPeriod}
	const prefix = "in-cluster config (give --kubeconfig outside a pod): "
	if _, err := newClient("", sa); err == nil || !strings.HasPrefix(err.Error(), prefix+`ServiceAccount: read tokenFile `+filepath.Join(dir, "token")+": ") {
		t.Errorf("no token: %v", err)
	}
	writeFile(t, filepath.Join(dir, "token"), []byte("sa-1"))
	if _, err := newClient("", sa); err == nil || !strings.HasPrefix(err.Error(), prefix+`ServiceAccount: read certificate-authority `+filepath.Join(dir, "ca.crt")+": ") {
		t.Errorf("no CA: %v", err)
	}
	writeFile(t, filepath.Join(dir, "ca.crt"), s.caPEM())
	short := setup{serviceAccountDir: dir, reloadPeriod: 0}
	c, err := newClient("", short)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(c); err != nil || s.last() != "Bearer sa-1||mntleak" {
		t.Errorf("in-cluster: %v, server saw %q", err, s.last())
	}
	writeFile(t, filepath.Join(dir, "token"), []byte("sa-2"))
	if err := get(c); err != nil || s.last() != "Bearer sa-2||mntleak" {
		t.Errorf("token rotated: %v, server saw %q", err, s.last())
	}

	t.Setenv("KUBERNETES_SERVICE_HOST", "fd00::1")
	t.Setenv("KUBERNETES_SERVICE_PORT", "443")
	if c, err := newClient("", short); err != nil || c.Host() != "https://[fd00::1]:443" {
		t.Errorf("IPv6 Service: %v, %v", c, err)
	}
	os.Unsetenv("KUBERNETES_SERVICE_PORT")
	if _, err := newClient("", short); err == nil || !strings.HasPrefix(err.Error(), prefix+"KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT") {
		t.Errorf("no Service port: %v", err)
	}
}

// TestKubeconfigErrors: what does not give a server and a user is one
// line, prefixed by the file, naming what is wrong.
func TestKubeconfigErrors(t *testing.T) {
	dir := t.TempDir()
	const ok = `clusters: [{name: c, cluster: {server: "https://127.0.0.1:6443"}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: ctx, context: {cluster: c, user: u}}, {name: lost, context: {cluster: nope, user: u}},
  {name: nobody, context: {cluster: c, user: nope}}, {name: empty, context: {user: u}}]
`
	for _, tc := range []struct{ yaml, want string }{
		{ok, "no current-context"},
		{ok + "current-context: other", `no context named "other"`},
		{ok + "current-context: lost", `context "lost": no cluster named "nope"`},
		{ok + "current-context: nobody", `context "nobody": no user named "nope"`},
		{ok + "current-context: empty", `context "empty" names no cluster`},
		{"current-context: ctx\ncontexts: [{name: ctx, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\n" +
			"clusters: [{name: c, cluster: {server: \"https://a\"}}, {name: c, cluster: {server: \"https://b\"}}]",
			`context "ctx": 2 entries named "c" in clusters`},
		{"current-context: ctx\ncontexts: [{name: ctx, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\nclusters: [{name: c, cluster: {}}]",
			`cluster "c": no server`},
		{"current-context: ctx\ncontexts: [{name: ctx, context: {cluster: c, user: u}}]\nusers: [{name: u, user: {}}]\nclusters: [{name: c, cluster: {server: 10.0.0.1:6443}}]",
			`cluster "c": server "10.0.0.1:6443": want an https:// (or http://) URL`},
		{"current-context: ctx\ncontexts: [{name: ctx, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: \"https://k\"}}]\n" +
			"users: [{name: u, user: {auth-provider: {name: oidc, config: {idp-issuer-url: x}}}}]",
			`user "u": auth-provider is not supported`},
		{"current-context: ctx\ncontexts: [{name: ctx, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: \"https://k\"}}]\n" +
			"users: [{name: u, user: {exec: {command: aws, apiVersion: client.authentication.k8s.io/v1alpha1}}}]",
			`user "u": exec: apiVersion "client.authentication.k8s.io/v1alpha1": want client.authentication.k8s.io/v1 or client.authentication.k8s.io/v1beta1`},
		{"current-context: ctx\ncontexts: [{name: ctx, context: {cluster: c, user: u}}]\nclusters: [{name: c, cluster: {server: \"https://k\"}}]\n" +
			"users: [{name: u, user: {client-certificate-data: Zm9v}}]",
			`user "u": a client certificate needs its key and a key its certificate`},
	} {
		path := filepath.Join(dir, "kubeconfig")
		writeFile(t, path, []byte(tc.yaml))
		_, err := New(path)
		if err == nil || err.Error() != "kubeconfig "+path+": "+tc.want && !strings.HasPrefix(err.Error(), "kubeconfig "+path+": "+tc.want+" ") ||
			strings.Contains(err.Error(), "\n") {
			t.Errorf("%s:\n%v\nwant %q", tc.yaml, err, tc.want)
		}
	}
}

// TestPlainHTTP: an http:// server gets no credentials (as with clientcmd);
// a proxy-url is where requests go.
func TestPlainHTTP(t *testing.T) {
	var mu sync.Mutex
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		seen = append(seen, r.Host+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	dir := t.TempDir()
	if err := getPod(t, writeKubeconfig(t, dir, map[string]any{"server": srv.URL}, map[string]any{"token": "tok-1"})); err != nil {
		t.Error(err)
	}
	if err := getPod(t, writeKubeconfig(t, dir, map[string]any{"server": "http://api.invalid:8080", "proxy-url": srv.URL}, nil)); err != nil {
		t.Error(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := strings.TrimPrefix(srv.URL, "http://") + " |api.invalid:8080 "; strings.Join(seen, "|") != want {
		t.Errorf("the server saw %q, want %q", strings.Join(seen, "|"), want)
	}
}
