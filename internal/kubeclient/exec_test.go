package kubeclient

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// plugin writes an exec plugin in dir that notes each run (a line in
// runs, its arguments, KUBERNETES_EXEC_INFO and $GREETING in files) and
// prints the file out; it returns the kubeconfig's exec entry for it (the
// command relative to the kubeconfig's directory).
func plugin(t *testing.T, dir, apiVersion string) map[string]any {
	t.Helper()
	script := `#!/bin/sh
echo run >> "$EXEC_DIR/runs"
printf '%s' "$*" > "$EXEC_DIR/args"
printf '%s' "$KUBERNETES_EXEC_INFO" > "$EXEC_DIR/info"
printf '%s' "$GREETING" > "$EXEC_DIR/greeting"
cat "$EXEC_DIR/out"
`
	if err := os.WriteFile(filepath.Join(dir, "plugin.sh"), []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	return map[string]any{"apiVersion": apiVersion, "command": "./plugin.sh", "args": []string{"--region", "x"},
		"env": []map[string]string{{"name": "EXEC_DIR", "value": dir}, {"name": "GREETING", "value": "hello"}}, "interactiveMode": "IfAvailable"}
}

// prints sets what the plugin in dir prints: an ExecCredential of
// apiVersion with status.
func prints(t *testing.T, dir, apiVersion string, status map[string]any) {
	t.Helper()
	b, err := json.Marshal(map[string]any{"apiVersion": apiVersion, "kind": "ExecCredential", "status": status})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "out"), b)
}

// runs is how many times the plugin in dir ran.
func runs(t *testing.T, dir string) int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "runs"))
	if os.IsNotExist(err) {
		return 0
	} else if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(b), "run\n")
}

// TestExecCredential: the plugin runs at the first request with its args,
// env and the ExecCredential request; its token is kept until it
// expires (one that expired runs the plugin again), and dropped when the
// server refuses it; a v1beta1 plugin given the cluster.
func TestExecCredential(t *testing.T) {
	const v1 = "client.authentication.k8s.io/v1"
	s := startAPI(t, nil)
	dir := t.TempDir()
	cluster := map[string]any{"server": s.URL, "certificate-authority-data": base64.StdEncoding.EncodeToString(s.caPEM())}
	c, err := New(writeKubeconfig(t, dir, cluster, map[string]any{"exec": plugin(t, dir, v1)}))
	if err != nil || runs(t, dir) != 0 {
		t.Fatalf("New: %v, %d runs", err, runs(t, dir))
	}
	past, future := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339), time.Now().Add(time.Hour).UTC().Format(time.RFC3339)
	prints(t, dir, v1, map[string]any{"token": "exec-1", "expirationTimestamp": past})
	for i := 1; i <= 2; i++ {
		if err := get(c); err != nil || s.last() != "Bearer exec-1||mntleak" || runs(t, dir) != i {
			t.Errorf("request %d, the token expired: %v, server saw %q, %d runs", i, err, s.last(), runs(t, dir))
		}
	}
	info, _ := os.ReadFile(filepath.Join(dir, "info"))
	args, _ := os.ReadFile(filepath.Join(dir, "args"))
	greeting, _ := os.ReadFile(filepath.Join(dir, "greeting"))
	if string(info) != `{"apiVersion":"`+v1+`","kind":"ExecCredential","spec":{"interactive":false}}` || string(args) != "--region x" || string(greeting) != "hello" {
		t.Errorf("the plugin got KUBERNETES_EXEC_INFO %s, args %q, GREETING %q", info, args, greeting)
	}
	prints(t, dir, v1, map[string]any{"token": "exec-2", "expirationTimestamp": future})
	for i := 1; i <= 2; i++ {
		if err := get(c); err != nil || s.last() != "Bearer exec-2||mntleak" || runs(t, dir) != 3 {
			t.Errorf("request %d, a token of an hour: %v, server saw %q, %d runs", i, err, s.last(), runs(t, dir))
		}
	}
	s.mu.Lock()
	s.deny = "Bearer exec-2"
	s.mu.Unlock()
	prints(t, dir, v1, map[string]any{"token": "exec-3"})
	if err := get(c); err == nil || !strings.Contains(err.Error(), ": 401 Unauthorized") {
		t.Errorf("a token refused: %v", err)
	}
	if err := get(c); err != nil || s.last() != "Bearer exec-3||mntleak" || runs(t, dir) != 4 {
		t.Errorf("after a refusal: %v, server saw %q, %d runs", err, s.last(), runs(t, dir))
	}

	const v1beta1 = "client.authentication.k8s.io/v1beta1"
	exec := plugin(t, dir, v1beta1)
	exec["provideClusterInfo"] = true
	delete(exec, "interactiveMode")
	prints(t, dir, v1beta1, map[string]any{"token": "beta"})
	if err := getPod(t, writeKubeconfig(t, dir, cluster, map[string]any{"exec": exec})); err != nil || s.last() != "Bearer beta||mntleak" {
		t.Errorf("v1beta1: %v, server saw %q", err, s.last())
	}
	var req struct {
		APIVersion string `json:"apiVersion"`
		Spec       struct {
			Cluster struct {
				Server string `json:"server"`
				CA     []byte `json:"certificate-authority-data"`
			} `json:"cluster"`
		} `json:"spec"`
	}
	info, _ = os.ReadFile(filepath.Join(dir, "info"))
	if err := json.Unmarshal(info, &req); err != nil || req.APIVersion != v1beta1 || req.Spec.Cluster.Server != s.URL || string(req.Spec.Cluster.CA) != string(s.caPEM()) {
		t.Errorf("provideClusterInfo: KUBERNETES_EXEC_INFO %s (%v)", info, err)
	}
}

// TestExecClientCertificate: a plugin's certificate and key are the
// client certificate of the TLS handshake.
func TestExecClientCertificate(t *testing.T) {
	const v1 = "client.authentication.k8s.io/v1"
	ca := newTestCA(t)
	s := startAPI(t, ca)
	dir := t.TempDir()
	cluster := map[string]any{"server": s.URL, "certificate-authority-data": base64.StdEncoding.EncodeToString(s.caPEM())}
	certPEM, keyPEM := ca.client(t, "from-plugin")
	prints(t, dir, v1, map[string]any{"clientCertificateData": string(certPEM), "clientKeyData": string(keyPEM)})
	if err := getPod(t, writeKubeconfig(t, dir, cluster, map[string]any{"exec": plugin(t, dir, v1)})); err != nil || s.last() != "|from-plugin|mntleak" || runs(t, dir) != 1 {
		t.Errorf("exec certificate: %v, server saw %q, %d runs", err, s.last(), runs(t, dir))
	}
}

// TestExecFailure: a plugin that fails is an error naming it and the
// first line of what it said; one missing gives its install hint; one
// that hangs is stopped with the request; one that prints another
// version is refused.
func TestExecFailure(t *testing.T) {
	s := startAPI(t, nil)
	dir := t.TempDir()
	cluster := map[string]any{"server": s.URL, "certificate-authority-data": base64.StdEncoding.EncodeToString(s.caPEM())}
	fail := filepath.Join(dir, "fail.sh")
	if err := os.WriteFile(fail, []byte("#!/bin/sh\necho 'token expired: run sso login' >&2\necho second line >&2\nexit 1\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	exec := map[string]any{"apiVersion": "client.authentication.k8s.io/v1", "command": fail}
	err := getPod(t, writeKubeconfig(t, dir, cluster, map[string]any{"exec": exec}))
	if err == nil || !strings.HasSuffix(err.Error(), `: user "u": exec plugin `+fail+": exit status 1: token expired: run sso login") {
		t.Errorf("a plugin that fails: %v", err)
	}
	exec = map[string]any{"apiVersion": "client.authentication.k8s.io/v1", "command": "mntleak-no-such-plugin", "installHint": "install it\nwith care"}
	err = getPod(t, writeKubeconfig(t, dir, cluster, map[string]any{"exec": exec}))
	if err == nil || !strings.Contains(err.Error(), `exec plugin mntleak-no-such-plugin: exec: "mntleak-no-such-plugin": executable file not found in $PATH (install it)`) {
		t.Errorf("a plugin missing: %v", err)
	}

	hang := filepath.Join(dir, "hang.sh")
	if err := os.WriteFile(hang, []byte("#!/bin/sh\nsleep 30\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	c, err := New(writeKubeconfig(t, dir, cluster, map[string]any{"exec": map[string]any{"apiVersion": "client.authentication.k8s.io/v1", "command": hang}}))
	if err != nil {
		t.Fatal(err)
	}
	c.http.Timeout = 100 * time.Millisecond
	start := time.Now()
	if err := get(c); err == nil || time.Since(start) > 10*time.Second || !strings.Contains(err.Error(), "exec plugin "+hang) {
		t.Errorf("a plugin that hangs: %v after %v", err, time.Since(start))
	}

	prints(t, dir, "client.authentication.k8s.io/v1beta1", map[string]any{"token": "x"})
	err = getPod(t, writeKubeconfig(t, dir, cluster, map[string]any{"exec": plugin(t, dir, "client.authentication.k8s.io/v1")}))
	if err == nil || !strings.Contains(err.Error(), "printed a client.authentication.k8s.io/v1beta1 ExecCredential, want an ExecCredential client.authentication.k8s.io/v1") {
		t.Errorf("a plugin of another version: %v", err)
	}
}
