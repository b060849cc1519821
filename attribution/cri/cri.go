package cri

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"github.com/mntleak/mntleak/attribution"
)

// DefaultSockets are the sockets --cri-socket=auto tries, in order:
// containerd's, then CRI-O's, under /run and under /var/run (not a link to
// /run on every distribution).
var DefaultSockets = []string{
	"/run/containerd/containerd.sock",
	"/run/crio/crio.sock",
	"/var/run/containerd/containerd.sock",
	"/var/run/crio/crio.sock",
}

// Source asks a CRI runtime. Its zero value is not usable: use New.
type Source struct {
	candidates []string

	mu   sync.Mutex
	conn *transport
	path string
}

// New returns a Source that connects, at its first call, to the first of
// sockets that exists.
func New(sockets ...string) *Source {
	return &Source{candidates: sockets}
}

// Name implements attribution.Source.
func (s *Source) Name() string { return "cri" }

// Socket returns the socket in use, "" before the first connection.
func (s *Source) Socket() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.path
}

// Close closes the connection, if any.
func (s *Source) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil
	}
	s.conn.close()
	s.conn = nil
	return nil
}

// connect returns the transport, on the first candidate socket that
// exists. It dials when a call needs a connection: a runtime restarted on
// the same socket is reached again.
func (s *Source) connect() (*transport, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn != nil {
		return s.conn, nil
	}
	for _, p := range s.candidates {
		st, err := os.Stat(p)
		if err != nil || st.Mode()&os.ModeSocket == 0 {
			continue
		}
		s.conn, s.path = newTransport(p), p
		return s.conn, nil
	}
	return nil, fmt.Errorf("no CRI socket at %s: %w", strings.Join(s.candidates, ", "), attribution.ErrUnavailable)
}

// Container implements attribution.Source: a container, or a pod's
// sandbox by its id.
func (s *Source) Container(ctx context.Context, id string) (attribution.Container, error) {
	conn, err := s.connect()
	if err != nil {
		return attribution.Container{}, err
	}
	resp, err := conn.call(ctx, "ContainerStatus", idRequest(id))
	if err == nil {
		st, err := statusField(resp, decodeContainerStatus)
		if err != nil {
			return attribution.Container{}, s.err("ContainerStatus", id, err)
		}
		c := attribution.Container{ID: st.id, Runtime: s.Name(), Name: st.name, Image: image(st)}
		attribution.FromLabels(&c, st.labels)
		return c, nil
	}
	if err = s.err("ContainerStatus", id, err); !errors.Is(err, attribution.ErrNotFound) {
		return attribution.Container{}, err
	}
	// The pause process's cgroup names the sandbox.
	resp, err = conn.call(ctx, "PodSandboxStatus", idRequest(id))
	if err != nil {
		return attribution.Container{}, s.err("PodSandboxStatus", id, err)
	}
	sb, err := statusField(resp, decodeSandbox)
	if err != nil {
		return attribution.Container{}, s.err("PodSandboxStatus", id, err)
	}
	return attribution.Container{ID: sb.id, Runtime: s.Name(), Name: sb.name, Sandbox: true,
		Pod: sb.name, Namespace: sb.namespace, PodUID: sb.uid}, nil
}

// statusField decodes the status (field 1) of a ContainerStatusResponse
// or a PodSandboxStatusResponse with decode; an answer without one is an
// error.
func statusField[T any](resp []byte, decode func([]byte) (T, error)) (T, error) {
	var zero T
	st, err := bytesField(resp, 1)
	if err != nil {
		return zero, err
	}
	if st == nil {
		return zero, errors.New("answer without a status")
	}
	return decode(st)
}

// sandboxes lists the runtime's pod sandboxes labelled with selector.
func (s *Source) sandboxes(ctx context.Context, selector map[string]string, what string) ([]sandbox, error) {
	conn, err := s.connect()
	if err != nil {
		return nil, err
	}
	resp, err := conn.call(ctx, "ListPodSandbox", listRequest(fieldSandboxSelector, selector))
	if err != nil {
		return nil, s.err("ListPodSandbox", what, err)
	}
	sbs, err := decodeSandboxes(resp)
	if err != nil {
		return nil, s.err("ListPodSandbox", what, err)
	}
	return sbs, nil
}

// Pod implements attribution.Source: the sandbox labelled with the UID,
// a ready one first (a pod whose sandbox was recreated has several).
func (s *Source) Pod(ctx context.Context, uid string) (attribution.Pod, error) {
	sbs, err := s.sandboxes(ctx, map[string]string{attribution.LabelPodUID: uid}, uid)
	if err != nil {
		return attribution.Pod{}, err
	}
	best := -1
	for i, sb := range sbs {
		if sb.uid != uid {
			continue
		}
		if best < 0 || (sb.state == sandboxReady && sbs[best].state != sandboxReady) {
			best = i
		}
	}
	if best < 0 {
		return attribution.Pod{}, fmt.Errorf("pod sandbox with uid %s: %w", uid, attribution.ErrNotFound)
	}
	return attribution.Pod{UID: uid, Name: sbs[best].name, Namespace: sbs[best].namespace, Source: s.Name()}, nil
}

// err names a failed call and tells its kind: NotFound is
// attribution.ErrNotFound, DeadlineExceeded is context.DeadlineExceeded.
func (s *Source) err(call, id string, err error) error {
	switch {
	case codeOf(err) == codeNotFound:
		return fmt.Errorf("CRI %s %s: %w", call, id, attribution.ErrNotFound)
	case codeOf(err) == codeDeadlineExceeded || errors.Is(err, context.DeadlineExceeded):
		return fmt.Errorf("CRI %s %s on %s: %w", call, id, s.Socket(), context.DeadlineExceeded)
	case codeOf(err) == codeCanceled || errors.Is(err, context.Canceled):
		return fmt.Errorf("CRI %s %s on %s: %w", call, id, s.Socket(), context.Canceled)
	}
	return fmt.Errorf("CRI %s %s on %s: %w", call, id, s.Socket(), err)
}

// image is the image as the pod spec named it when the runtime kept that,
// else its name or reference.
func image(st containerStatus) string {
	switch {
	case st.userImage != "":
		return st.userImage
	case st.image != "":
		return st.image
	}
	return st.imageRef
}
