package attribution

import (
	"context"
	"errors"
)

// Container is one container as its runtime names it.
type Container struct {
	ID      string `json:"id"`
	Runtime string `json:"runtime,omitempty"` // the Source that answered: cri, docker
	Name    string `json:"name,omitempty"`    // the runtime's name: docker's "web", the CRI metadata name
	Image   string `json:"image,omitempty"`
	// The pod, for a Kubernetes container (its io.kubernetes.* labels).
	Pod          string `json:"pod,omitempty"`
	Namespace    string `json:"namespace,omitempty"`
	PodUID       string `json:"pod_uid,omitempty"`
	PodContainer string `json:"pod_container,omitempty"` // the container's name in the pod spec
	// Sandbox is set for a pod's sandbox (its pause container).
	Sandbox bool `json:"sandbox,omitempty"`
}

// Pod is a Kubernetes pod, by UID.
type Pod struct {
	UID       string `json:"uid"`
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	Source    string `json:"source,omitempty"` // cri, docker, api
}

// Source is one place that knows containers or pods: a container runtime,
// the API server.
type Source interface {
	// Name is the source's short name (cri, docker, api).
	Name() string
	// Container returns the container with this id (a 64-hex id, as the
	// cgroup path gives it), ErrNotFound when the source has none, or
	// ErrUnavailable when the source is not there at all (no socket).
	Container(ctx context.Context, id string) (Container, error)
	// Pod returns the pod with this UID, with the same errors.
	Pod(ctx context.Context, uid string) (Pod, error)
}

// Lookup answers the questions enrichment asks.
type Lookup interface {
	Container(ctx context.Context, id string) (Container, error)
	Pod(ctx context.Context, uid string) (Pod, error)
}

var (
	// ErrNotFound: no source knows the id.
	ErrNotFound = errors.New("not found")
	// ErrUnavailable: the source is not there (its socket does not exist).
	ErrUnavailable = errors.New("unavailable")
)

// IsTimeout reports whether err is a deadline passing.
func IsTimeout(err error) bool { return errors.Is(err, context.DeadlineExceeded) }
