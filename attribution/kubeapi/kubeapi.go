package kubeapi

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/internal/kubeclient"
)

// listTTL is how long one list of the node's pods answers lookups: a
// finding names up to three processes (caller, holder, leaker), each of
// which may miss the runtime's cache, and one list serves them all
// instead of three requests to the API server. A pod too new for it is
// a miss, which the resolver remembers longer anyway (its negative TTL).
const listTTL = 2 * time.Second

// Source asks the API server about the pods bound to one node.
type Source struct {
	client *kubeclient.Client
	node   string
	now    func() time.Time

	mu     sync.Mutex
	listed time.Time // when last was listed; zero: never
	last   []kubeclient.Pod
}

// New returns a Source for the pods on node.
func New(client *kubeclient.Client, node string) *Source {
	return &Source{client: client, node: node, now: time.Now}
}

// Name implements attribution.Source.
func (s *Source) Name() string { return "api" }

// pods lists the node's pods, or returns the list made within listTTL.
// Callers only read it.
func (s *Source) pods(ctx context.Context) ([]kubeclient.Pod, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if now := s.now(); !s.listed.IsZero() && now.Sub(s.listed) < listTTL && !now.Before(s.listed) {
		return s.last, nil
	}
	pods, err := s.list(ctx)
	if err != nil {
		return nil, err // not kept: the next lookup asks again
	}
	s.listed, s.last = s.now(), pods
	return pods, nil
}

func (s *Source) list(ctx context.Context) ([]kubeclient.Pod, error) {
	items, err := s.client.ListPodsOnNode(ctx, s.node)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			return nil, fmt.Errorf("list pods on node %s: %w", s.node, context.DeadlineExceeded)
		}
		return nil, fmt.Errorf("list pods on node %s: %w", s.node, err)
	}
	// The server applies the selector; checked again all the same.
	out := items[:0]
	for _, p := range items {
		if p.Spec.NodeName == s.node {
			out = append(out, p)
		}
	}
	return out, nil
}

// Pod implements attribution.Source.
func (s *Source) Pod(ctx context.Context, uid string) (attribution.Pod, error) {
	pods, err := s.pods(ctx)
	if err != nil {
		return attribution.Pod{}, err
	}
	for _, p := range pods {
		if p.Metadata.UID == uid {
			return attribution.Pod{UID: uid, Name: p.Metadata.Name, Namespace: p.Metadata.Namespace, Source: s.Name()}, nil
		}
	}
	return attribution.Pod{}, fmt.Errorf("pod %s on node %s: %w", uid, s.node, attribution.ErrNotFound)
}

// Container implements attribution.Source: the pod whose status reports
// the container id.
func (s *Source) Container(ctx context.Context, id string) (attribution.Container, error) {
	pods, err := s.pods(ctx)
	if err != nil {
		return attribution.Container{}, err
	}
	for _, p := range pods {
		statuses := append(append(append([]kubeclient.ContainerStatus(nil), p.Status.InitContainerStatuses...),
			p.Status.ContainerStatuses...), p.Status.EphemeralContainerStatuses...)
		for _, st := range statuses {
			// "containerd://<id>", "cri-o://<id>", "docker://<id>"
			if _, cid, ok := strings.Cut(st.ContainerID, "://"); ok && cid == id {
				return attribution.Container{ID: id, Runtime: s.Name(), Name: st.Name, Image: st.Image, Pod: p.Metadata.Name,
					Namespace: p.Metadata.Namespace, PodUID: p.Metadata.UID, PodContainer: st.Name}, nil
			}
		}
	}
	return attribution.Container{}, fmt.Errorf("container %s in the pods on node %s: %w", id, s.node, attribution.ErrNotFound)
}
