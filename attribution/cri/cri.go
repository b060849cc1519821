package cri

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

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

	mu     sync.Mutex
	conn   *grpc.ClientConn
	client runtimeapi.RuntimeServiceClient
	path   string
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
	err := s.conn.Close()
	s.conn, s.client = nil, nil
	if err != nil {
		return fmt.Errorf("close CRI connection to %s: %w", s.path, err)
	}
	return nil
}

// connect returns the client, connecting to the first candidate socket
// that exists. gRPC connects lazily and reconnects by itself: a runtime
// restarted on the same socket is reached again.
func (s *Source) connect() (runtimeapi.RuntimeServiceClient, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.client != nil {
		return s.client, nil
	}
	for _, p := range s.candidates {
		st, err := os.Stat(p)
		if err != nil || st.Mode()&os.ModeSocket == 0 {
			continue
		}
		conn, err := grpc.NewClient("unix://"+p, grpc.WithTransportCredentials(insecure.NewCredentials()))
		if err != nil {
			return nil, fmt.Errorf("CRI socket %s: %w", p, err)
		}
		s.conn, s.client, s.path = conn, runtimeapi.NewRuntimeServiceClient(conn), p
		return s.client, nil
	}
	return nil, fmt.Errorf("no CRI socket at %s: %w", strings.Join(s.candidates, ", "), attribution.ErrUnavailable)
}

// Container implements attribution.Source: a container, or a pod's
// sandbox by its id.
func (s *Source) Container(ctx context.Context, id string) (attribution.Container, error) {
	client, err := s.connect()
	if err != nil {
		return attribution.Container{}, err
	}
	resp, err := client.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err == nil && resp.GetStatus() != nil {
		st := resp.GetStatus()
		c := attribution.Container{ID: st.GetId(), Runtime: s.Name(), Name: st.GetMetadata().GetName(), Image: image(st.GetImage(), st.GetImageRef())}
		attribution.FromLabels(&c, st.GetLabels())
		return c, nil
	}
	if err = s.err("ContainerStatus", id, err); !errors.Is(err, attribution.ErrNotFound) {
		return attribution.Container{}, err
	}
	// The pause process's cgroup names the sandbox.
	sb, err := client.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id})
	if err != nil || sb.GetStatus() == nil {
		return attribution.Container{}, s.err("PodSandboxStatus", id, err)
	}
	st := sb.GetStatus()
	md := st.GetMetadata()
	c := attribution.Container{ID: st.GetId(), Runtime: s.Name(), Name: md.GetName(), Sandbox: true,
		Pod: md.GetName(), Namespace: md.GetNamespace(), PodUID: md.GetUid()}
	return c, nil
}

// Pod implements attribution.Source: the sandbox labelled with the UID,
// a ready one first (a pod whose sandbox was recreated has several).
func (s *Source) Pod(ctx context.Context, uid string) (attribution.Pod, error) {
	client, err := s.connect()
	if err != nil {
		return attribution.Pod{}, err
	}
	resp, err := client.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{
		Filter: &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{attribution.LabelPodUID: uid}}})
	if err != nil {
		return attribution.Pod{}, s.err("ListPodSandbox", uid, err)
	}
	var best *runtimeapi.PodSandbox
	for _, sb := range resp.GetItems() {
		if sb.GetMetadata().GetUid() != uid {
			continue
		}
		if best == nil || (sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY && best.GetState() != runtimeapi.PodSandboxState_SANDBOX_READY) {
			best = sb
		}
	}
	if best == nil {
		return attribution.Pod{}, fmt.Errorf("pod sandbox with uid %s: %w", uid, attribution.ErrNotFound)
	}
	md := best.GetMetadata()
	return attribution.Pod{UID: uid, Name: md.GetName(), Namespace: md.GetNamespace(), Source: s.Name()}, nil
}

// err names a failed call and tells its kind: NotFound is
// attribution.ErrNotFound, DeadlineExceeded is context.DeadlineExceeded.
func (s *Source) err(call, id string, err error) error {
	if err == nil {
		return fmt.Errorf("CRI %s %s on %s: empty answer", call, id, s.Socket())
	}
	switch status.Code(err) {
	case codes.NotFound:
		return fmt.Errorf("CRI %s %s: %w", call, id, attribution.ErrNotFound)
	case codes.DeadlineExceeded:
		return fmt.Errorf("CRI %s %s on %s: %w", call, id, s.Socket(), context.DeadlineExceeded)
	case codes.Canceled:
		return fmt.Errorf("CRI %s %s on %s: %w", call, id, s.Socket(), context.Canceled)
	}
	return fmt.Errorf("CRI %s %s on %s: %w", call, id, s.Socket(), err)
}

// image is the image as the pod spec named it when the runtime kept that,
// else its name or reference.
func image(spec *runtimeapi.ImageSpec, ref string) string {
	switch {
	case spec.GetUserSpecifiedImage() != "":
		return spec.GetUserSpecifiedImage()
	case spec.GetImage() != "":
		return spec.GetImage()
	}
	return ref
}
