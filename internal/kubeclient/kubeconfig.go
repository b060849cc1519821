package kubeclient

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// kubeconfigFile is the part of a kubeconfig file (clientcmd's v1 Config,
// YAML or JSON) read here; other fields are ignored.
type kubeconfigFile struct {
	CurrentContext string         `json:"current-context"`
	Clusters       []namedCluster `json:"clusters"`
	Contexts       []namedContext `json:"contexts"`
	Users          []namedUser    `json:"users"`
}

type namedCluster struct {
	Name    string       `json:"name"`
	Cluster clusterEntry `json:"cluster"`
}

type namedContext struct {
	Name    string       `json:"name"`
	Context contextEntry `json:"context"`
}

type namedUser struct {
	Name string    `json:"name"`
	User userEntry `json:"user"`
}

// contextEntry is a kubeconfig's context.
type contextEntry struct {
	Cluster string `json:"cluster"`
	User    string `json:"user"`
}

// clusterEntry is a kubeconfig's cluster.
type clusterEntry struct {
	Server                   string `json:"server"`
	TLSServerName            string `json:"tls-server-name"`
	InsecureSkipTLSVerify    bool   `json:"insecure-skip-tls-verify"`
	CertificateAuthority     string `json:"certificate-authority"`
	CertificateAuthorityData string `json:"certificate-authority-data"` // base64 of PEM
	ProxyURL                 string `json:"proxy-url"`
	Extensions               []struct {
		Name      string          `json:"name"`
		Extension json.RawMessage `json:"extension"`
	} `json:"extensions"`
}

// userEntry is a kubeconfig's user (clientcmd's AuthInfo).
type userEntry struct {
	ClientCertificate     string          `json:"client-certificate"`
	ClientCertificateData string          `json:"client-certificate-data"` // base64 of PEM
	ClientKey             string          `json:"client-key"`
	ClientKeyData         string          `json:"client-key-data"` // base64 of PEM
	Token                 string          `json:"token"`
	TokenFile             string          `json:"tokenFile"`
	Username              string          `json:"username"`
	Password              string          `json:"password"`
	Exec                  *execConfig     `json:"exec"`
	AuthProvider          json.RawMessage `json:"auth-provider"`
	As                    string          `json:"as"`
	AsUID                 string          `json:"as-uid"`
	AsGroups              []string        `json:"as-groups"`
}

// execExtension is the cluster extension clientcmd gives an exec plugin
// as spec.cluster.config.
const execExtension = "client.authentication.k8s.io/exec"

// loadKubeconfig reads a kubeconfig file and resolves its current context
// (errors do not repeat the path: New prefixes it).
func loadKubeconfig(path string) (*config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f kubeconfigFile
	if err := yaml.Unmarshal(b, &f); err != nil {
		return nil, err
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	dir := filepath.Dir(abs)
	if f.CurrentContext == "" {
		return nil, errors.New("no current-context")
	}
	ctx, err := find(f.Contexts, "context", f.CurrentContext, func(e namedContext) (string, contextEntry) { return e.Name, e.Context })
	if err != nil {
		return nil, err
	}
	if ctx.Cluster == "" {
		return nil, fmt.Errorf("context %q names no cluster", f.CurrentContext)
	}
	cl, err := find(f.Clusters, "cluster", ctx.Cluster, func(e namedCluster) (string, clusterEntry) { return e.Name, e.Cluster })
	if err != nil {
		return nil, fmt.Errorf("context %q: %w", f.CurrentContext, err)
	}
	var user userEntry
	if ctx.User != "" {
		if user, err = find(f.Users, "user", ctx.User, func(e namedUser) (string, userEntry) { return e.Name, e.User }); err != nil {
			return nil, fmt.Errorf("context %q: %w", f.CurrentContext, err)
		}
	}
	cfg := &config{source: "kubeconfig " + path, cluster: fmt.Sprintf("cluster %q", ctx.Cluster), user: fmt.Sprintf("user %q", ctx.User)}
	if err := cfg.setCluster(cl, dir); err != nil {
		return nil, err
	}
	if cfg.server.Scheme == "https" {
		if err := cfg.setUser(user, dir); err != nil {
			return nil, err
		}
	}
	return cfg, nil
}

// find is the entry of a list named name (kind: "cluster", "context",
// "user"); none or two are an error.
func find[E, T any](list []E, kind, name string, entry func(E) (string, T)) (T, error) {
	var found T
	n := 0
	for _, e := range list {
		if k, v := entry(e); k == name {
			found = v
			n++
		}
	}
	switch n {
	case 0:
		return found, fmt.Errorf("no %s named %q", kind, name)
	case 1:
		return found, nil
	}
	return found, fmt.Errorf("%d entries named %q in %ss", n, name, kind)
}

// setCluster sets the server and TLS of cl (relative paths are of dir).
func (cfg *config) setCluster(cl clusterEntry, dir string) error {
	if cl.Server == "" {
		return fmt.Errorf("%s: no server", cfg.cluster)
	}
	u, err := url.Parse(cl.Server)
	switch {
	case err != nil && !strings.Contains(cl.Server, "://"), err == nil && u.Scheme != "https" && u.Scheme != "http":
		return fmt.Errorf("%s: server %q: want an https:// (or http://) URL", cfg.cluster, cl.Server)
	case err != nil:
		return fmt.Errorf("%s: server: %w", cfg.cluster, err)
	case u.Host == "":
		return fmt.Errorf("%s: server %q has no host", cfg.cluster, cl.Server)
	}
	cfg.server = u
	if cl.ProxyURL != "" {
		p, err := url.Parse(cl.ProxyURL)
		if err != nil {
			return fmt.Errorf("%s: proxy-url: %w", cfg.cluster, err)
		}
		switch p.Scheme {
		case "http", "https", "socks5", "socks5h":
		default:
			return fmt.Errorf("%s: proxy-url %q: want an http, https, socks5 or socks5h URL", cfg.cluster, cl.ProxyURL)
		}
		cfg.proxy = p
	}
	if u.Scheme == "http" {
		return nil // clientcmd too reads no TLS setting (and no credentials) for http
	}
	cfg.caFile = relative(dir, cl.CertificateAuthority)
	if cfg.caData, err = decode(cl.CertificateAuthorityData); err != nil {
		return fmt.Errorf("%s: certificate-authority-data: %w", cfg.cluster, err)
	}
	if len(cfg.caData) > 0 {
		cfg.caFile = "" // data wins, as in clientcmd
	}
	cfg.insecure, cfg.serverName = cl.InsecureSkipTLSVerify, cl.TLSServerName
	if cfg.insecure && (cfg.caFile != "" || len(cfg.caData) > 0) {
		return fmt.Errorf("%s: a certificate authority and insecure-skip-tls-verify: choose one", cfg.cluster)
	}
	ec := &execCluster{Server: cl.Server, TLSServerName: cl.TLSServerName, InsecureSkipTLSVerify: cl.InsecureSkipTLSVerify,
		CertificateAuthorityData: cfg.caData, ProxyURL: cl.ProxyURL}
	for _, e := range cl.Extensions {
		if e.Name == execExtension {
			ec.Config = e.Extension
		}
	}
	cfg.execCluster = ec
	return nil
}

// setUser sets the authentication of u (relative paths are of dir).
func (cfg *config) setUser(u userEntry, dir string) error {
	switch {
	case len(u.AuthProvider) > 0 && string(u.AuthProvider) != "null":
		return fmt.Errorf("%s: auth-provider is not supported (client-go removed its gcp, azure and oidc plugins): use an exec plugin (e.g. gke-gcloud-auth-plugin, kubelogin)", cfg.user)
	case u.As != "" || u.AsUID != "" || len(u.AsGroups) > 0:
		return fmt.Errorf("%s: impersonation (as, as-uid, as-groups) is not supported", cfg.user)
	case (u.Token != "" || u.TokenFile != "") && (u.Username != "" || u.Password != ""):
		return fmt.Errorf("%s: a token and a username/password: choose one", cfg.user)
	}
	cfg.token, cfg.tokenFile = u.Token, relative(dir, u.TokenFile)
	cfg.username, cfg.password = u.Username, u.Password
	cfg.certFile, cfg.keyFile = relative(dir, u.ClientCertificate), relative(dir, u.ClientKey)
	var err error
	if cfg.certData, err = decode(u.ClientCertificateData); err != nil {
		return fmt.Errorf("%s: client-certificate-data: %w", cfg.user, err)
	}
	if cfg.keyData, err = decode(u.ClientKeyData); err != nil {
		return fmt.Errorf("%s: client-key-data: %w", cfg.user, err)
	}
	hasCert, hasKey := cfg.certFile != "" || len(cfg.certData) > 0, cfg.keyFile != "" || len(cfg.keyData) > 0
	if hasCert != hasKey {
		return fmt.Errorf("%s: a client certificate needs its key and a key its certificate", cfg.user)
	}
	if u.Exec != nil && !hasCert && cfg.token == "" && cfg.tokenFile == "" && cfg.username == "" && cfg.password == "" {
		// As client-go: an exec plugin is not run when the user has other credentials.
		if err := u.Exec.check(cfg.user); err != nil {
			return err
		}
		cfg.exec = u.Exec
		if cfg.exec.Command != "" && strings.ContainsRune(cfg.exec.Command, filepath.Separator) {
			cfg.exec.Command = relative(dir, cfg.exec.Command)
		}
	}
	return nil
}

// relative is path, relative to dir unless absolute ("" stays "").
func relative(dir, path string) string {
	if path == "" || filepath.IsAbs(path) {
		return path
	}
	return filepath.Join(dir, path)
}

// decode is base64 data ("" is none).
func decode(s string) ([]byte, error) {
	if s == "" {
		return nil, nil
	}
	return base64.StdEncoding.DecodeString(s)
}
