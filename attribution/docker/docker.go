package docker

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"syscall"

	"github.com/mntleak/mntleak/attribution"
)

// DefaultSocket is where dockerd listens by default.
const DefaultSocket = "/var/run/docker.sock"

// maxBody bounds an answer read from the Engine.
const maxBody = 4 << 20

// Source asks the Docker Engine listening on a unix socket.
type Source struct {
	socket string
	client *http.Client
}

// New returns a Source for the Engine on socket.
func New(socket string) *Source {
	tr := &http.Transport{
		DialContext:       attribution.DialUnix(socket),
		MaxIdleConns:      2,
		DisableKeepAlives: false,
	}
	return &Source{socket: socket, client: &http.Client{Transport: tr}}
}

// Name implements attribution.Source.
func (s *Source) Name() string { return "docker" }

// Close drops idle connections.
func (s *Source) Close() { s.client.CloseIdleConnections() }

// inspect is the part of GET /containers/{id}/json read here.
type inspect struct {
	ID     string `json:"Id"`
	Name   string `json:"Name"`
	Config struct {
		Image  string            `json:"Image"`
		Labels map[string]string `json:"Labels"`
	} `json:"Config"`
}

// summary is one container of GET /containers/json.
type summary struct {
	ID     string            `json:"Id"`
	Names  []string          `json:"Names"`
	Image  string            `json:"Image"`
	Labels map[string]string `json:"Labels"`
}

// Container implements attribution.Source.
func (s *Source) Container(ctx context.Context, id string) (attribution.Container, error) {
	var in inspect
	if err := s.get(ctx, "/containers/"+url.PathEscape(id)+"/json", &in); err != nil {
		return attribution.Container{}, fmt.Errorf("docker inspect %s: %w", id, err)
	}
	c := attribution.Container{ID: in.ID, Runtime: s.Name(), Name: strings.TrimPrefix(in.Name, "/"), Image: in.Config.Image}
	attribution.FromLabels(&c, in.Config.Labels)
	return c, nil
}

// Pod implements attribution.Source: any container labelled with the
// pod's UID names the pod.
func (s *Source) Pod(ctx context.Context, uid string) (attribution.Pod, error) {
	filters, err := json.Marshal(map[string][]string{"label": {attribution.LabelPodUID + "=" + uid}})
	if err != nil {
		return attribution.Pod{}, err
	}
	var list []summary
	if err := s.get(ctx, "/containers/json?all=1&filters="+url.QueryEscape(string(filters)), &list); err != nil {
		return attribution.Pod{}, fmt.Errorf("docker containers of pod %s: %w", uid, err)
	}
	for _, c := range list {
		if c.Labels[attribution.LabelPodUID] == uid && c.Labels[attribution.LabelPodName] != "" {
			return attribution.Pod{UID: uid, Name: c.Labels[attribution.LabelPodName], Namespace: c.Labels[attribution.LabelPodNamespace],
				Source: s.Name()}, nil
		}
	}
	return attribution.Pod{}, fmt.Errorf("docker containers of pod %s: %w", uid, attribution.ErrNotFound)
}

// get decodes the JSON answer to a GET of path into v.
func (s *Source) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://docker"+path, nil)
	if err != nil {
		return err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		switch {
		case errors.Is(err, syscall.ENOENT), errors.Is(err, syscall.ECONNREFUSED):
			return fmt.Errorf("%s: %w (%v)", s.socket, attribution.ErrUnavailable, err)
		case ctx.Err() != nil:
			return fmt.Errorf("%s: %w", s.socket, ctx.Err())
		}
		return fmt.Errorf("%s: %w", s.socket, err)
	}
	defer resp.Body.Close()
	body := io.LimitReader(resp.Body, maxBody)
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return attribution.ErrNotFound
	case resp.StatusCode != http.StatusOK:
		msg, _ := io.ReadAll(io.LimitReader(body, 512))
		return fmt.Errorf("%s: %s: %s", s.socket, resp.Status, strings.TrimSpace(string(msg)))
	}
	if err := json.NewDecoder(body).Decode(v); err != nil {
		return fmt.Errorf("%s: decode the answer: %w", s.socket, err)
	}
	return nil
}
