package kubeapi

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/mntleak/mntleak/attribution"
)

func pod(name, ns, uid, node, containerID string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, UID: types.UID(uid)},
		Spec:       corev1.PodSpec{NodeName: node},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{
			{Name: "app", Image: "busybox:1.36", ContainerID: "containerd://" + containerID}}},
	}
}

func TestSource(t *testing.T) {
	client := fake.NewClientset(
		pod("web-7f9c", "default", "u1", "node-1", "c1"),
		pod("elsewhere", "default", "u2", "node-2", "c2"),
	)
	s := New(client, "node-1")
	ctx := context.Background()
	if p, err := s.Pod(ctx, "u1"); err != nil || p != (attribution.Pod{UID: "u1", Name: "web-7f9c", Namespace: "default", Source: "api"}) {
		t.Errorf("Pod(u1) = %+v, %v", p, err)
	}
	// Another node's pod is not this node's (the selector asks the server
	// for this node's; the fake clientset ignores it, the Source checks).
	if _, err := s.Pod(ctx, "u2"); !errors.Is(err, attribution.ErrNotFound) {
		t.Errorf("a pod on another node: %v", err)
	}
	want := attribution.Container{ID: "c1", Runtime: "api", Name: "app", Image: "busybox:1.36", Pod: "web-7f9c", Namespace: "default",
		PodUID: "u1", PodContainer: "app"}
	if c, err := s.Container(ctx, "c1"); err != nil || c != want {
		t.Errorf("Container(c1) = %+v, %v", c, err)
	}
	if _, err := s.Container(ctx, "c9"); !errors.Is(err, attribution.ErrNotFound) {
		t.Errorf("unknown container: %v", err)
	}
}
