package cri

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/mntleak/mntleak/attribution"
)

// runtime is a CRI runtime service over a fixed set of containers and
// sandboxes, served by a real gRPC server on a unix socket: it answers
// the RPCs Source makes as containerd does (NotFound for an unknown id,
// the label selector applied).
type runtime struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	containers map[string]*runtimeapi.ContainerStatus
	sandboxes  []*runtimeapi.PodSandbox
	delay      time.Duration
	failWith   error // ListContainers' answer, when set

	mu    sync.Mutex
	calls []string
}

func (r *runtime) record(call string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, call)
}

func (r *runtime) wait(ctx context.Context) error {
	select {
	case <-time.After(r.delay):
		return nil
	case <-ctx.Done():
		return status.FromContextError(ctx.Err()).Err()
	}
}

func (r *runtime) ContainerStatus(ctx context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	call := "ContainerStatus " + req.GetContainerId()
	if _, ok := ctx.Deadline(); ok {
		call += " (with a deadline)"
	}
	r.record(call)
	if err := r.wait(ctx); err != nil {
		return nil, err
	}
	st, ok := r.containers[req.GetContainerId()]
	if !ok {
		return nil, status.Errorf(codes.NotFound, "an error occurred when try to find container %q: not found", req.GetContainerId())
	}
	return &runtimeapi.ContainerStatusResponse{Status: st}, nil
}

func (r *runtime) PodSandboxStatus(_ context.Context, req *runtimeapi.PodSandboxStatusRequest) (*runtimeapi.PodSandboxStatusResponse, error) {
	r.record("PodSandboxStatus " + req.GetPodSandboxId())
	for _, sb := range r.sandboxes {
		if sb.GetId() == req.GetPodSandboxId() {
			return &runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{
				Id: sb.GetId(), Metadata: sb.GetMetadata(), State: sb.GetState(), Labels: sb.GetLabels()}}, nil
		}
	}
	return nil, status.Errorf(codes.NotFound, "an error occurred when try to find sandbox %q: not found", req.GetPodSandboxId())
}

func (r *runtime) ListPodSandbox(_ context.Context, req *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	r.record("ListPodSandbox")
	var out []*runtimeapi.PodSandbox
	for _, sb := range r.sandboxes {
		match := true
		for k, v := range req.GetFilter().GetLabelSelector() {
			match = match && sb.GetLabels()[k] == v
		}
		if match {
			out = append(out, sb)
		}
	}
	return &runtimeapi.ListPodSandboxResponse{Items: out}, nil
}

// serve starts r on a socket in a temporary directory and returns its path.
func serve(t *testing.T, r *runtime) string {
	t.Helper()
	sock := filepath.Join(t.TempDir(), "containerd.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	runtimeapi.RegisterRuntimeServiceServer(srv, r)
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = srv.Serve(ln)
	}()
	t.Cleanup(func() {
		srv.Stop()
		<-done
	})
	return sock
}

const (
	exporterID = "3f1c0e6e8b8a4f4d9c2b7a6e5d4c3b2a1f0e9d8c7b6a5f4e3d2c1b0a9f8e7d6c"
	sandboxID  = "9a8b7c6d5e4f3a2b1c0d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b"
	oldSandbox = "1111111111111111111111111111111111111111111111111111111111111111"
	podUID     = "7d2c9a1e-3b4f-4c5d-8e6f-0a1b2c3d4e5f"
)

func testRuntime() *runtime {
	labels := map[string]string{
		attribution.LabelPodName: "node-exporter-x2x", attribution.LabelPodNamespace: "monitoring",
		attribution.LabelPodUID: podUID, attribution.LabelContainerName: "node-exporter",
	}
	podLabels := map[string]string{attribution.LabelPodName: "node-exporter-x2x", attribution.LabelPodNamespace: "monitoring", attribution.LabelPodUID: podUID}
	md := &runtimeapi.PodSandboxMetadata{Name: "node-exporter-x2x", Namespace: "monitoring", Uid: podUID, Attempt: 1}
	return &runtime{
		containers: map[string]*runtimeapi.ContainerStatus{exporterID: {
			Id: exporterID, Metadata: &runtimeapi.ContainerMetadata{Name: "node-exporter"},
			Image: &runtimeapi.ImageSpec{Image: "quay.io/prometheus/node-exporter:v1.8.2"}, ImageRef: "sha256:abc", Labels: labels,
		}},
		sandboxes: []*runtimeapi.PodSandbox{
			{Id: oldSandbox, Metadata: &runtimeapi.PodSandboxMetadata{Name: "node-exporter-x2x", Namespace: "monitoring", Uid: podUID},
				State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, Labels: podLabels},
			{Id: sandboxID, Metadata: md, State: runtimeapi.PodSandboxState_SANDBOX_READY, Labels: podLabels},
			{Id: "2222222222222222222222222222222222222222222222222222222222222222",
				Metadata: &runtimeapi.PodSandboxMetadata{Name: "web-7f9c", Namespace: "default", Uid: "0f3c2a4e-5b6d-4e7f-8a9b-1c2d3e4f5a6b"},
				State:    runtimeapi.PodSandboxState_SANDBOX_READY,
				Labels:   map[string]string{attribution.LabelPodUID: "0f3c2a4e-5b6d-4e7f-8a9b-1c2d3e4f5a6b"}},
		},
	}
}

func TestContainer(t *testing.T) {
	rt := testRuntime()
	src := New(filepath.Join(t.TempDir(), "absent.sock"), serve(t, rt))
	defer src.Close()
	tests := []struct {
		name    string
		id      string
		want    attribution.Container
		wantErr error
	}{
		{"a pod's container", exporterID, attribution.Container{ID: exporterID, Runtime: "cri", Name: "node-exporter",
			Image: "quay.io/prometheus/node-exporter:v1.8.2", Pod: "node-exporter-x2x", Namespace: "monitoring", PodUID: podUID,
			PodContainer: "node-exporter"}, nil},
		{"a pod's sandbox (the pause container)", sandboxID, attribution.Container{ID: sandboxID, Runtime: "cri", Name: "node-exporter-x2x",
			Pod: "node-exporter-x2x", Namespace: "monitoring", PodUID: podUID, Sandbox: true}, nil},
		{"unknown", strings.Repeat("0", 64), attribution.Container{}, attribution.ErrNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := src.Container(context.Background(), tt.id)
			if !errors.Is(err, tt.wantErr) || got != tt.want {
				t.Fatalf("Container(%s) = %+v, %v; want %+v, %v", tt.id[:12], got, err, tt.want, tt.wantErr)
			}
		})
	}
	if !strings.HasSuffix(src.Socket(), "containerd.sock") {
		t.Errorf("socket in use %q: the first candidate that exists", src.Socket())
	}
}

func TestPod(t *testing.T) {
	src := New(serve(t, testRuntime()))
	defer src.Close()
	tests := []struct {
		uid     string
		want    attribution.Pod
		wantErr error
	}{
		{podUID, attribution.Pod{UID: podUID, Name: "node-exporter-x2x", Namespace: "monitoring", Source: "cri"}, nil},
		{"0f3c2a4e-5b6d-4e7f-8a9b-1c2d3e4f5a6b", attribution.Pod{UID: "0f3c2a4e-5b6d-4e7f-8a9b-1c2d3e4f5a6b", Name: "web-7f9c", Namespace: "default", Source: "cri"}, nil},
		{"00000000-0000-4000-8000-000000000000", attribution.Pod{}, attribution.ErrNotFound},
	}
	for _, tt := range tests {
		got, err := src.Pod(context.Background(), tt.uid)
		if !errors.Is(err, tt.wantErr) || got != tt.want {
			t.Errorf("Pod(%s) = %+v, %v; want %+v, %v", tt.uid, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestUnavailableAndTimeout(t *testing.T) {
	dir := t.TempDir()
	src := New(filepath.Join(dir, "containerd.sock"), filepath.Join(dir, "crio.sock"))
	if _, err := src.Container(context.Background(), exporterID); !errors.Is(err, attribution.ErrUnavailable) {
		t.Errorf("no socket: %v, want ErrUnavailable", err)
	}
	// A slow runtime: the caller's deadline ends the call, as a timeout.
	rt := testRuntime()
	rt.delay = 5 * time.Second
	slow := New(serve(t, rt))
	defer slow.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := slow.Container(ctx, exporterID)
	if !attribution.IsTimeout(err) {
		t.Errorf("slow runtime: %v, want a timeout", err)
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("slow runtime: returned after %v", d)
	}
	// Through a Resolver: cached, so the runtime is asked once.
	fast := testRuntime()
	r := attribution.NewResolver(attribution.Options{}, New(serve(t, fast)))
	for range 3 {
		if c, err := r.Container(context.Background(), exporterID); err != nil || c.Pod != "node-exporter-x2x" {
			t.Fatalf("through a resolver: %+v, %v", c, err)
		}
	}
	fast.mu.Lock()
	defer fast.mu.Unlock()
	if len(fast.calls) != 1 {
		t.Errorf("runtime asked %v, want one ContainerStatus", fast.calls)
	}
}

func (r *runtime) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	r.record("ListContainers")
	if r.failWith != nil {
		return nil, r.failWith
	}
	var out []*runtimeapi.Container
	for _, st := range r.containers {
		match := true
		for k, v := range req.GetFilter().GetLabelSelector() {
			match = match && st.GetLabels()[k] == v
		}
		if match {
			out = append(out, &runtimeapi.Container{Id: st.GetId(), PodSandboxId: sandboxID, Metadata: st.GetMetadata(), Labels: st.GetLabels()})
		}
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}
