package kubeclient

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"
)

// newTransport is the round tripper of cfg: TLS to its server, each
// request authenticated.
func newTransport(cfg *config) (http.RoundTripper, error) {
	base := http.DefaultTransport.(*http.Transport).Clone() // proxy of the environment, HTTP/2, timeouts
	if cfg.proxy != nil {
		base.Proxy = http.ProxyURL(cfg.proxy)
	}
	if cfg.server.Scheme != "https" {
		return base, nil
	}
	a, err := newAuth(cfg)
	if err != nil {
		return nil, err
	}
	base.TLSClientConfig = &tls.Config{ServerName: cfg.serverName, InsecureSkipVerify: cfg.insecure}
	if a.hasCert() {
		base.TLSClientConfig.GetClientCertificate = func(info *tls.CertificateRequestInfo) (*tls.Certificate, error) {
			c, err := a.current(info.Context())
			if err != nil || c.cert == nil {
				return &tls.Certificate{}, err // none: the server may take a token instead
			}
			return c.cert, nil
		}
	}
	t := &transports{template: base, cur: base}
	switch {
	case len(cfg.caData) > 0:
		pool, err := parseCA(cfg.caData)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate-authority-data: %w", cfg.cluster, err)
		}
		base.TLSClientConfig.RootCAs = pool
	case cfg.caFile != "":
		t.ca = &reloaded[*x509.CertPool]{
			read:   func() ([]byte, error) { return readFile(cfg.cluster, "certificate-authority", cfg.caFile) },
			period: cfg.reloadPeriod,
			parse: func(b []byte) (*x509.CertPool, error) {
				pool, err := parseCA(b)
				if err != nil {
					return nil, fmt.Errorf("%s: certificate-authority %s: %w", cfg.cluster, cfg.caFile, err)
				}
				return pool, nil
			},
		}
		t.cur = nil
		if _, err := t.get(); err != nil {
			return nil, err
		}
	}
	return &authTransport{transports: t, auth: a, source: cfg.source}, nil
}

// parseCA is a pool of the PEM certificates in b, at least one.
func parseCA(b []byte) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(b) {
		return nil, errors.New("no PEM certificate")
	}
	return pool, nil
}

// transports is the transport to use: a new one (and the old one's idle
// connections closed) when the CA file changes.
type transports struct {
	template *http.Transport           // all but the CA from a file
	ca       *reloaded[*x509.CertPool] // nil: the CA does not change

	mu   sync.Mutex
	pool *x509.CertPool
	cur  *http.Transport
}

func (t *transports) get() (*http.Transport, error) {
	if t.ca == nil {
		return t.cur, nil
	}
	pool, err := t.ca.get()
	if err != nil {
		return nil, err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if pool != t.pool {
		old := t.cur
		t.cur = t.template.Clone()
		t.cur.TLSClientConfig.RootCAs = pool
		t.pool = pool
		if old != nil {
			old.CloseIdleConnections()
		}
	}
	return t.cur, nil
}

// auth is how a user authenticates: a bearer token (as written, from a
// file re-read, or from an exec plugin), a username and password, a
// client certificate (as written, from files re-read, or from the exec
// plugin).
type auth struct {
	token              string
	tokenFile          *reloaded[string]
	username, password string
	cert               *tls.Certificate
	certFiles          *reloaded[*tls.Certificate]
	exec               *execPlugin
}

// creds are what one request is sent with.
type creds struct {
	token              string
	username, password string
	cert               *tls.Certificate
	exec               *execCred // the plugin's, to drop when refused
}

func newAuth(cfg *config) (*auth, error) {
	a := &auth{token: cfg.token, username: cfg.username, password: cfg.password}
	if cfg.tokenFile != "" {
		a.tokenFile = tokenFrom(cfg.user, cfg.tokenFile, cfg.reloadPeriod)
	}
	switch {
	case len(cfg.certData) > 0 || len(cfg.keyData) > 0:
		certPEM, keyPEM := cfg.certData, cfg.keyData
		if len(certPEM) == 0 {
			b, err := readFile(cfg.user, "client-certificate", cfg.certFile)
			if err != nil {
				return nil, err
			}
			certPEM = b
		}
		if len(keyPEM) == 0 {
			b, err := readFile(cfg.user, "client-key", cfg.keyFile)
			if err != nil {
				return nil, err
			}
			keyPEM = b
		}
		cert, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			return nil, fmt.Errorf("%s: client certificate: %w", cfg.user, err)
		}
		a.cert = &cert
	case cfg.certFile != "":
		a.certFiles = certFrom(cfg.user, cfg.certFile, cfg.keyFile, cfg.reloadPeriod)
	}
	// Files are read now: one missing is an error of New, not of the first
	// request. The exec plugin runs at the first request (as with client-go).
	if a.tokenFile != nil {
		if _, err := a.tokenFile.get(); err != nil {
			return nil, err
		}
	}
	if a.certFiles != nil {
		if _, err := a.certFiles.get(); err != nil {
			return nil, err
		}
	}
	if cfg.exec != nil {
		p, err := newExecPlugin(cfg)
		if err != nil {
			return nil, err
		}
		a.exec = p
	}
	return a, nil
}

// certFrom reads a client certificate and its key from files (both read
// again when a period old, parsed again when one changed).
func certFrom(user, certFile, keyFile string, period time.Duration) *reloaded[*tls.Certificate] {
	return &reloaded[*tls.Certificate]{
		read: func() ([]byte, error) {
			c, err := readFile(user, "client-certificate", certFile)
			if err != nil {
				return nil, err
			}
			k, err := readFile(user, "client-key", keyFile)
			if err != nil {
				return nil, err
			}
			return append(append(c, 0), k...), nil // no PEM holds a NUL
		},
		period: period,
		parse: func(b []byte) (*tls.Certificate, error) {
			i := bytes.LastIndexByte(b, 0)
			cert, err := tls.X509KeyPair(b[:i], b[i+1:])
			if err != nil {
				return nil, fmt.Errorf("%s: client-certificate %s, client-key %s: %w", user, certFile, keyFile, err)
			}
			return &cert, nil
		},
	}
}

func (a *auth) hasCert() bool { return a.cert != nil || a.certFiles != nil || a.exec != nil }

// current is what a request is sent with now, reading the files and
// running the plugin that need it.
func (a *auth) current(ctx context.Context) (creds, error) {
	c := creds{token: a.token, username: a.username, password: a.password, cert: a.cert}
	if a.tokenFile != nil {
		tok, err := a.tokenFile.get()
		if err != nil {
			return creds{}, err
		}
		c.token = tok
	}
	if a.certFiles != nil {
		cert, err := a.certFiles.get()
		if err != nil {
			return creds{}, err
		}
		c.cert = cert
	}
	if a.exec != nil {
		ec, err := a.exec.get(ctx)
		if err != nil {
			return creds{}, err
		}
		c.token, c.cert, c.exec = ec.token, ec.cert, ec
	}
	return c, nil
}

// authTransport sends each request with the current credentials.
type authTransport struct {
	*transports
	auth   *auth
	source string

	mu       sync.Mutex
	lastCert *tls.Certificate
}

// RoundTrip sends a copy of req with its Authorization. A client
// certificate that changed closes the idle connections made with the
// old one.
func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	c, err := t.auth.current(req.Context())
	var tr *http.Transport
	if err == nil {
		tr, err = t.get()
	}
	if err != nil {
		if req.Body != nil {
			_ = req.Body.Close() // as a RoundTripper must, even on error
		}
		return nil, fmt.Errorf("%s: %w", t.source, err)
	}
	t.mu.Lock()
	changed := t.lastCert != nil && c.cert != t.lastCert
	t.lastCert = c.cert
	t.mu.Unlock()
	if changed {
		tr.CloseIdleConnections()
	}
	r := req.Clone(req.Context())
	switch {
	case c.token != "":
		r.Header.Set("Authorization", "Bearer "+c.token)
	case c.username != "" || c.password != "":
		r.Header.Set("Authorization", "Basic "+base64.StdEncoding.EncodeToString([]byte(c.username+":"+c.password)))
	}
	resp, err := tr.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusUnauthorized && c.exec != nil {
		t.auth.exec.refused(c.exec)
	}
	return resp, err
}
