package kubeclient

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"io"
	"log"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// testCA issues certificates.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

func newTestCA(t *testing.T) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// client issues a client certificate of common name cn: its PEM and its
// key's.
func (ca *testCA) client(t *testing.T, cn string) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(time.Now().UnixNano()), Subject: pkix.Name{CommonName: cn},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: kder})
}

// apiServer is a TLS server that notes what each request came with.
type apiServer struct {
	*httptest.Server
	mu   sync.Mutex
	seen []string // "Authorization header|client certificate's CN|User-Agent"
	deny string   // an Authorization answered 401
}

// startAPI starts a TLS server; with clientCA, one that requires a client
// certificate it issued.
func startAPI(t *testing.T, clientCA *testCA) *apiServer {
	t.Helper()
	s := &apiServer{}
	s.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cn := ""
		if len(r.TLS.PeerCertificates) > 0 {
			cn = r.TLS.PeerCertificates[0].Subject.CommonName
		}
		s.mu.Lock()
		s.seen = append(s.seen, r.Header.Get("Authorization")+"|"+cn+"|"+r.Header.Get("User-Agent"))
		deny := s.deny != "" && r.Header.Get("Authorization") == s.deny
		s.mu.Unlock()
		if deny {
			w.WriteHeader(http.StatusUnauthorized)
			_, _ = w.Write([]byte(`{"kind":"Status","reason":"Unauthorized","code":401}`))
			return
		}
		_, _ = w.Write([]byte(`{"metadata":{"name":"web","namespace":"shop","uid":"u1"}}`))
	}))
	if clientCA != nil {
		pool := x509.NewCertPool()
		pool.AddCert(clientCA.cert)
		s.TLS = &tls.Config{ClientAuth: tls.RequireAndVerifyClientCert, ClientCAs: pool}
	}
	s.Config.ErrorLog = log.New(io.Discard, "", 0) // the handshakes the tests fail on purpose
	s.StartTLS()
	t.Cleanup(s.Close)
	return s
}

// caPEM is the PEM of the server's certificate (self-signed: its own CA).
func (s *apiServer) caPEM() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: s.Certificate().Raw})
}

// last is what the last request came with.
func (s *apiServer) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.seen) == 0 {
		return ""
	}
	return s.seen[len(s.seen)-1]
}

// writeKubeconfig writes a kubeconfig (as JSON) in dir whose current
// context is cluster and user, and returns its path.
func writeKubeconfig(t *testing.T, dir string, cluster, user map[string]any) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "Config", "current-context": "ctx",
		"clusters": []any{map[string]any{"name": "c", "cluster": cluster}},
		"users":    []any{map[string]any{"name": "u", "user": user}},
		"contexts": []any{map[string]any{"name": "ctx", "context": map[string]any{"cluster": "c", "user": "u"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "kubeconfig")
	writeFile(t, path, b)
	return path
}

func writeFile(t *testing.T, path string, b []byte) {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

// getPod makes one request of a client of the kubeconfig at path.
func getPod(t *testing.T, path string) error {
	t.Helper()
	c, err := New(path)
	if err != nil {
		t.Fatal(err)
	}
	return get(c)
}

func get(c *Client) error {
	_, err := c.GetPod(context.Background(), "shop", "web")
	return err
}

// TestServerCA: the server's CA from a file (a path relative to the
// kubeconfig's directory) or from data; without it the server's
// certificate is refused (x509); insecure-skip-tls-verify takes any, but
// not beside a CA; a CA file that changes is read again.
func TestServerCA(t *testing.T) {
	s := startAPI(t, nil)
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "ca.pem"), s.caPEM())
	if err := getPod(t, writeKubeconfig(t, dir, map[string]any{"server": s.URL, "certificate-authority": "ca.pem"}, nil)); err != nil {
		t.Errorf("CA file: %v", err)
	}
	data := base64.StdEncoding.EncodeToString(s.caPEM())
	if err := getPod(t, writeKubeconfig(t, dir, map[string]any{"server": s.URL, "certificate-authority-data": data}, nil)); err != nil {
		t.Errorf("CA data: %v", err)
	}
	err := getPod(t, writeKubeconfig(t, dir, map[string]any{"server": s.URL}, nil))
	var unknown x509.UnknownAuthorityError
	if !errors.As(err, &unknown) {
		t.Errorf("no CA: %v, want x509's unknown authority", err)
	}
	if err := getPod(t, writeKubeconfig(t, dir, map[string]any{"server": s.URL, "insecure-skip-tls-verify": true}, nil)); err != nil {
		t.Errorf("insecure-skip-tls-verify: %v", err)
	}
	path := writeKubeconfig(t, dir, map[string]any{"server": s.URL, "insecure-skip-tls-verify": true, "certificate-authority": "ca.pem"}, nil)
	if _, err := New(path); err == nil || !strings.Contains(err.Error(), "insecure-skip-tls-verify") {
		t.Errorf("a CA and insecure-skip-tls-verify: %v", err)
	}

	writeFile(t, filepath.Join(dir, "ca.pem"), newTestCA(t).pem) // another CA
	short := setup{serviceAccountDir: defaultServiceAccountDir, reloadPeriod: 0}
	c, err := newClient(writeKubeconfig(t, dir, map[string]any{"server": s.URL, "certificate-authority": "ca.pem"}, nil), short)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(c); !errors.As(err, &unknown) {
		t.Errorf("CA file of another CA: %v, want x509's unknown authority", err)
	}
	writeFile(t, filepath.Join(dir, "ca.pem"), s.caPEM())
	if err := get(c); err != nil {
		t.Errorf("the CA file rewritten with the server's CA: %v", err)
	}
}

// TestClientCertificate: a server that requires a client certificate gets
// the one of the kubeconfig, from files (paths relative to its
// directory, re-read as they change) or from data; without one it
// refuses.
func TestClientCertificate(t *testing.T) {
	ca := newTestCA(t)
	s := startAPI(t, ca)
	dir := t.TempDir()
	cluster := map[string]any{"server": s.URL, "certificate-authority-data": base64.StdEncoding.EncodeToString(s.caPEM())}
	certPEM, keyPEM := ca.client(t, "node-1")
	writeFile(t, filepath.Join(dir, "client.crt"), certPEM)
	writeFile(t, filepath.Join(dir, "client.key"), keyPEM)
	if err := getPod(t, writeKubeconfig(t, dir, cluster, map[string]any{"client-certificate": "client.crt", "client-key": "client.key"})); err != nil || s.last() != "|node-1|mntleak" {
		t.Errorf("certificate files: %v, server saw %q", err, s.last())
	}
	certPEM, keyPEM = ca.client(t, "node-2")
	user := map[string]any{"client-certificate-data": base64.StdEncoding.EncodeToString(certPEM), "client-key-data": base64.StdEncoding.EncodeToString(keyPEM)}
	if err := getPod(t, writeKubeconfig(t, dir, cluster, user)); err != nil || s.last() != "|node-2|mntleak" {
		t.Errorf("certificate data: %v, server saw %q", err, s.last())
	}
	if err := getPod(t, writeKubeconfig(t, dir, cluster, nil)); err == nil {
		t.Error("no client certificate: the server took the request")
	}
	path := writeKubeconfig(t, dir, cluster, map[string]any{"client-certificate": "client.crt", "client-key": "gone.key"})
	if _, err := New(path); err == nil || err.Error() != "kubeconfig "+path+`: user "u": read client-key `+filepath.Join(dir, "gone.key")+": open "+filepath.Join(dir, "gone.key")+": no such file or directory" {
		t.Errorf("a key file missing: %v", err)
	}

	short := setup{serviceAccountDir: defaultServiceAccountDir, reloadPeriod: 0}
	c, err := newClient(writeKubeconfig(t, dir, cluster, map[string]any{"client-certificate": "client.crt", "client-key": "client.key"}), short)
	if err != nil {
		t.Fatal(err)
	}
	if err := get(c); err != nil || s.last() != "|node-1|mntleak" {
		t.Errorf("certificate files: %v, server saw %q", err, s.last())
	}
	certPEM, keyPEM = ca.client(t, "node-1-renewed")
	writeFile(t, filepath.Join(dir, "client.crt"), certPEM)
	writeFile(t, filepath.Join(dir, "client.key"), keyPEM)
	if err := get(c); err != nil || s.last() != "|node-1-renewed|mntleak" {
		t.Errorf("certificate files renewed: %v, server saw %q", err, s.last())
	}
}
