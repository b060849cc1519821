package kubeclient

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"
)

// requestTimeout bounds each request to the API server.
const requestTimeout = 10 * time.Second

// userAgent is the User-Agent of the requests.
const userAgent = "mntleak"

// maxBody is the most of a response body read: a list of a node's pods
// (a few hundred) is far smaller.
const maxBody = 64 << 20

// Client calls the API server.
type Client struct {
	http *http.Client
	base *url.URL // scheme, host and any path prefix of the server
}

// New returns a client from the kubeconfig file (its current context),
// or with "" the in-cluster config (the pod's ServiceAccount).
func New(kubeconfig string) (*Client, error) {
	return newClient(kubeconfig, standardSetup())
}

// newClient is New with s: the ServiceAccount directory of the in-cluster
// config, the period of the files re-read (of either config).
func newClient(kubeconfig string, s setup) (*Client, error) {
	var cfg *config
	var err error
	if kubeconfig != "" {
		cfg, err = loadKubeconfig(kubeconfig)
	} else {
		cfg, err = inCluster(s.serviceAccountDir)
	}
	var rt http.RoundTripper
	if err == nil {
		cfg.reloadPeriod = s.reloadPeriod
		rt, err = newTransport(cfg)
	}
	switch {
	case err != nil && kubeconfig != "":
		return nil, fmt.Errorf("kubeconfig %s: %w", kubeconfig, err)
	case err != nil:
		return nil, fmt.Errorf("in-cluster config (give --kubeconfig outside a pod): %w", err)
	}
	return &Client{http: &http.Client{Transport: rt, Timeout: requestTimeout}, base: cfg.server}, nil
}

// Host is the server's URL.
func (c *Client) Host() string { return c.base.String() }

// StatusError is the API server's answer to a request it did not carry
// out: its HTTP code and the Status object's reason and message.
type StatusError struct {
	Method, Path string
	Code         int
	Reason       string // metav1.StatusReason: NotFound, AlreadyExists, Forbidden, ...
	Message      string
}

func (e *StatusError) Error() string {
	msg := e.Message
	if msg == "" {
		msg = http.StatusText(e.Code)
	}
	return fmt.Sprintf("%s %s: %d %s: %s", e.Method, e.Path, e.Code, e.Reason, msg)
}

// IsNotFound tells whether err is the server's "not found".
func IsNotFound(err error) bool {
	var s *StatusError
	return errors.As(err, &s) && (s.Reason == "NotFound" || s.Reason == "" && s.Code == http.StatusNotFound)
}

// IsAlreadyExists tells whether err is the server's "already exists".
func IsAlreadyExists(err error) bool {
	var s *StatusError
	return errors.As(err, &s) && s.Reason == "AlreadyExists"
}

// status is the part of a metav1.Status read from a failed request.
type status struct {
	Kind    string `json:"kind"`
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// do sends one request (body, when not nil, as JSON of contentType) and
// decodes a 2xx answer into out; any other answer is a *StatusError.
func (c *Client) do(ctx context.Context, method, path string, query url.Values, contentType string, body, out any) error {
	u := *c.base
	u.Path = strings.TrimSuffix(u.Path, "/") + path
	u.RawQuery = query.Encode()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return fmt.Errorf("%s %s: encode: %w", method, path, err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	req.Header.Set("Accept", "application/json")
	req.Header.Set("User-Agent", userAgent)
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fmt.Errorf("%s %s: read the answer: %w", method, path, err)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		se := &StatusError{Method: method, Path: path, Code: resp.StatusCode}
		var st status
		if json.Unmarshal(b, &st) == nil && st.Kind == "Status" {
			se.Reason, se.Message = st.Reason, st.Message
		} else {
			se.Message = strings.TrimSpace(string(b[:min(len(b), 200)]))
		}
		return se
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(b, out); err != nil {
		return fmt.Errorf("%s %s: decode the answer: %w", method, path, err)
	}
	return nil
}
