package kubeclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// execConfig is a kubeconfig user's exec plugin (clientcmd's ExecConfig):
// a command that prints an ExecCredential.
type execConfig struct {
	Command string   `json:"command"`
	Args    []string `json:"args"`
	Env     []struct {
		Name  string `json:"name"`
		Value string `json:"value"`
	} `json:"env"`
	APIVersion         string `json:"apiVersion"`
	InstallHint        string `json:"installHint"`
	ProvideClusterInfo bool   `json:"provideClusterInfo"`
	InteractiveMode    string `json:"interactiveMode"`
}

// The ExecCredential versions spoken (v1alpha1 went in Kubernetes 1.24).
const (
	execV1      = "client.authentication.k8s.io/v1"
	execV1beta1 = "client.authentication.k8s.io/v1beta1"
)

// check tells what the daemon cannot run: no command, an API version it
// does not speak, a plugin that must ask a user at a terminal.
func (e *execConfig) check(user string) error {
	switch {
	case e.Command == "":
		return fmt.Errorf("%s: exec: no command", user)
	case e.APIVersion != execV1 && e.APIVersion != execV1beta1:
		return fmt.Errorf("%s: exec: apiVersion %q: want %s or %s", user, e.APIVersion, execV1, execV1beta1)
	case e.InteractiveMode == "Always":
		return fmt.Errorf("%s: exec: interactiveMode Always: the daemon has no terminal", user)
	}
	for _, v := range e.Env {
		if v.Name == "" {
			return fmt.Errorf("%s: exec: an env entry has no name", user)
		}
	}
	return nil
}

// execCluster is the cluster an exec plugin with provideClusterInfo is
// given (spec.cluster of the ExecCredential).
type execCluster struct {
	Server                   string          `json:"server"`
	TLSServerName            string          `json:"tls-server-name,omitempty"`
	InsecureSkipTLSVerify    bool            `json:"insecure-skip-tls-verify,omitempty"`
	CertificateAuthorityData []byte          `json:"certificate-authority-data,omitempty"`
	ProxyURL                 string          `json:"proxy-url,omitempty"`
	Config                   json.RawMessage `json:"config,omitempty"`
}

// execCredential is the ExecCredential written to a plugin (spec) and
// read back (status).
type execCredential struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Spec       struct {
		Cluster     *execCluster `json:"cluster,omitempty"`
		Interactive bool         `json:"interactive"`
	} `json:"spec"`
	Status *struct {
		ExpirationTimestamp   *time.Time `json:"expirationTimestamp"`
		Token                 string     `json:"token"`
		ClientCertificateData string     `json:"clientCertificateData"`
		ClientKeyData         string     `json:"clientKeyData"`
	} `json:"status,omitempty"`
}

// execCred is what a plugin's run gave: a token, a client certificate or
// both.
type execCred struct {
	token string
	cert  *tls.Certificate
}

// execPlugin runs a plugin and keeps its credential until it expires.
type execPlugin struct {
	cfg  *execConfig
	who  string // `user "NAME"`, in errors
	info string // KUBERNETES_EXEC_INFO

	mu   sync.Mutex
	cred *execCred // nil: run the plugin
	exp  time.Time // zero: never expires
}

// newExecPlugin prepares a plugin's runs.
func newExecPlugin(cfg *config) (*execPlugin, error) {
	req := execCredential{APIVersion: cfg.exec.APIVersion, Kind: "ExecCredential"}
	if cfg.exec.ProvideClusterInfo {
		req.Spec.Cluster = cfg.execCluster
	}
	b, err := json.Marshal(req)
	if err != nil {
		return nil, fmt.Errorf("%s: exec: encode the ExecCredential: %w", cfg.user, err)
	}
	return &execPlugin{cfg: cfg.exec, who: cfg.user, info: string(b)}, nil
}

// get returns the credential, running the plugin (bound by ctx) when
// there is none or it expired.
func (p *execPlugin) get(ctx context.Context) (*execCred, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cred != nil && (p.exp.IsZero() || time.Now().Before(p.exp)) {
		return p.cred, nil
	}
	cred, exp, err := p.run(ctx)
	if err != nil {
		return nil, err
	}
	p.cred, p.exp = cred, exp
	return cred, nil
}

// refused drops cred after the server answered 401 to a request made
// with it: the next request runs the plugin again (as client-go does).
func (p *execPlugin) refused(cred *execCred) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cred == cred {
		p.cred = nil
	}
}

// run runs the plugin once and reads its ExecCredential.
func (p *execPlugin) run(ctx context.Context) (*execCred, time.Time, error) {
	cmd := exec.CommandContext(ctx, p.cfg.Command, p.cfg.Args...)
	cmd.Env = os.Environ()
	for _, v := range p.cfg.Env {
		cmd.Env = append(cmd.Env, v.Name+"="+v.Value)
	}
	cmd.Env = append(cmd.Env, "KUBERNETES_EXEC_INFO="+p.info)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = time.Second // a child left holding its output does not hold the request
	if err := cmd.Run(); err != nil {
		if errors.Is(err, exec.ErrNotFound) && p.cfg.InstallHint != "" {
			return nil, time.Time{}, fmt.Errorf("%s: exec plugin %s: %w (%s)", p.who, p.cfg.Command, err, oneLine(p.cfg.InstallHint))
		}
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%w)", err, ctx.Err())
		}
		if line := oneLine(stderr.String()); line != "" {
			return nil, time.Time{}, fmt.Errorf("%s: exec plugin %s: %w: %s", p.who, p.cfg.Command, err, line)
		}
		return nil, time.Time{}, fmt.Errorf("%s: exec plugin %s: %w", p.who, p.cfg.Command, err)
	}
	cred, exp, err := p.parse(stdout.Bytes())
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("%s: exec plugin %s: %w", p.who, p.cfg.Command, err)
	}
	return cred, exp, nil
}

// parse reads a plugin's output: an ExecCredential of the version asked
// for, with a token or a certificate and its key.
func (p *execPlugin) parse(out []byte) (*execCred, time.Time, error) {
	var ec execCredential
	if err := json.Unmarshal(out, &ec); err != nil {
		return nil, time.Time{}, fmt.Errorf("its output: %w", err)
	}
	st := ec.Status
	switch {
	case ec.Kind != "ExecCredential" || ec.APIVersion != p.cfg.APIVersion:
		return nil, time.Time{}, fmt.Errorf("printed a %s %s, want an ExecCredential %s", ec.APIVersion, ec.Kind, p.cfg.APIVersion)
	case st == nil:
		return nil, time.Time{}, errors.New("printed no status")
	case (st.ClientCertificateData == "") != (st.ClientKeyData == ""):
		return nil, time.Time{}, errors.New("printed a client certificate without its key or a key without its certificate")
	case st.Token == "" && st.ClientCertificateData == "":
		return nil, time.Time{}, errors.New("printed neither a token nor a client certificate")
	}
	cred := &execCred{token: st.Token}
	if st.ClientCertificateData != "" {
		cert, err := tls.X509KeyPair([]byte(st.ClientCertificateData), []byte(st.ClientKeyData))
		if err != nil {
			return nil, time.Time{}, fmt.Errorf("its client certificate: %w", err)
		}
		cred.cert = &cert
	}
	var exp time.Time
	if st.ExpirationTimestamp != nil {
		exp = *st.ExpirationTimestamp
	}
	return cred, exp, nil
}

// oneLine is the first line of s that is not blank, trimmed.
func oneLine(s string) string {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			return line
		}
	}
	return ""
}
