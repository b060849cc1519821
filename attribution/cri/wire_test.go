package cri

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/mntleak/mntleak/attribution"
)

// TestMessagesAsGenerated: the requests this package encodes are what
// the generated cri-api types decode, and what those types encode (every
// field set, the ones mntleak skips too) decodes to the fields mntleak
// reads: the field numbers are checked against the .proto's generated
// code, which shares nothing with messages.go.
func TestMessagesAsGenerated(t *testing.T) {
	var csr runtimeapi.ContainerStatusRequest
	if err := proto.Unmarshal(idRequest("abc"), &csr); err != nil || csr.GetContainerId() != "abc" {
		t.Errorf("ContainerStatusRequest: %v, %v", &csr, err)
	}
	var psr runtimeapi.PodSandboxStatusRequest
	if err := proto.Unmarshal(idRequest("def"), &psr); err != nil || psr.GetPodSandboxId() != "def" {
		t.Errorf("PodSandboxStatusRequest: %v, %v", &psr, err)
	}
	sel := map[string]string{attribution.LabelPodUID: "u1", attribution.LabelPodName: "web"}
	var lps runtimeapi.ListPodSandboxRequest
	if err := proto.Unmarshal(listRequest(fieldSandboxSelector, sel), &lps); err != nil || !reflect.DeepEqual(lps.GetFilter().GetLabelSelector(), sel) {
		t.Errorf("ListPodSandboxRequest: %v, %v", &lps, err)
	}
	var lc runtimeapi.ListContainersRequest
	if err := proto.Unmarshal(listRequest(fieldContainerSelector, sel), &lc); err != nil || !reflect.DeepEqual(lc.GetFilter().GetLabelSelector(), sel) {
		t.Errorf("ListContainersRequest: %v, %v", &lc, err)
	}

	labels := map[string]string{attribution.LabelPodName: "web", attribution.LabelContainerName: "app", "": "empty key"}
	full := &runtimeapi.ContainerStatus{Id: "c1", Metadata: &runtimeapi.ContainerMetadata{Name: "app", Attempt: 3},
		State: runtimeapi.ContainerState_CONTAINER_EXITED, CreatedAt: 1, StartedAt: 2, FinishedAt: 3, ExitCode: 137,
		Image:    &runtimeapi.ImageSpec{Image: "sha256:1", UserSpecifiedImage: "nginx:1.27", Annotations: map[string]string{"a": "b"}},
		ImageRef: "docker.io/library/nginx@sha256:1", Reason: "OOMKilled", Message: "m", Labels: labels,
		Annotations: map[string]string{"x": "y"}, Mounts: []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: "/var/lib/kubelet/x"}},
		LogPath: "/var/log/pods/x", ImageId: "sha256:2"}
	b, err := proto.Marshal(&runtimeapi.ContainerStatusResponse{Status: full, Info: map[string]string{"info": "{}"}})
	if err != nil {
		t.Fatal(err)
	}
	got, err := statusField(b, decodeContainerStatus)
	want := containerStatus{id: "c1", name: "app", image: "sha256:1", userImage: "nginx:1.27", imageRef: "docker.io/library/nginx@sha256:1", labels: labels}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("ContainerStatusResponse decoded to %+v, %v; want %+v", got, err, want)
	}

	md := &runtimeapi.PodSandboxMetadata{Name: "web", Uid: "u1", Namespace: "shop", Attempt: 2}
	b, err = proto.Marshal(&runtimeapi.PodSandboxStatusResponse{Status: &runtimeapi.PodSandboxStatus{Id: "s1", Metadata: md,
		State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, CreatedAt: 5, Labels: labels, RuntimeHandler: "runc",
		Network: &runtimeapi.PodSandboxNetworkStatus{Ip: "10.0.0.1"}}, Timestamp: 9})
	if err != nil {
		t.Fatal(err)
	}
	if sb, err := statusField(b, decodeSandbox); err != nil || sb != (sandbox{id: "s1", name: "web", uid: "u1", namespace: "shop", state: 1}) {
		t.Errorf("PodSandboxStatusResponse decoded to %+v, %v", sb, err)
	}

	b, err = proto.Marshal(&runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{
		{Id: "s1", Metadata: md, State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY, Labels: labels},
		{Id: "s2", Metadata: md, CreatedAt: 7, RuntimeHandler: "kata"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	sbs, err := decodeSandboxes(b)
	wantSbs := []sandbox{{id: "s1", name: "web", uid: "u1", namespace: "shop", state: 1}, {id: "s2", name: "web", uid: "u1", namespace: "shop"}}
	if err != nil || !slices.Equal(sbs, wantSbs) {
		t.Errorf("ListPodSandboxResponse decoded to %+v, %v; want %+v", sbs, err, wantSbs)
	}

	b, err = proto.Marshal(&runtimeapi.ListContainersResponse{Containers: []*runtimeapi.Container{
		{Id: "c1", PodSandboxId: "s1", Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Labels: labels},
		{Id: "c2", Image: &runtimeapi.ImageSpec{Image: "busybox"}, State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	}})
	if err != nil {
		t.Fatal(err)
	}
	if ids, err := decodeContainerIDs(b); err != nil || !slices.Equal(ids, []string{"c1", "c2"}) {
		t.Errorf("ListContainersResponse decoded to %v, %v", ids, err)
	}
}

// TestMalformedAnswers: a truncated message, a field cut short, a
// compressed or oversized frame are errors, never a partial answer.
func TestMalformedAnswers(t *testing.T) {
	b, err := proto.Marshal(&runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{{Id: "s1",
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "web", Uid: "u1", Namespace: "shop"}}}})
	if err != nil {
		t.Fatal(err)
	}
	for n := 1; n < len(b); n++ {
		if sbs, err := decodeSandboxes(b[:n]); err == nil {
			t.Errorf("the answer cut at %d of %d bytes decoded to %+v", n, len(b), sbs)
		}
	}
	frame := func(flag byte, n uint32, body []byte) []byte {
		h := []byte{flag, 0, 0, 0, 0}
		binary.BigEndian.PutUint32(h[1:], n)
		return append(h, body...)
	}
	for name, in := range map[string][]byte{
		"compressed":     frame(1, 2, []byte{0x0a, 0}),
		"oversized":      frame(0, maxAnswer+1, nil),
		"shorter":        frame(0, 10, []byte{0x0a, 0}),
		"a partial head": {0, 0, 0},
	} {
		if msg, err := readMessage(bytes.NewReader(in)); err == nil {
			t.Errorf("%s frame: read %x", name, msg)
		}
	}
	if msg, err := readMessage(bytes.NewReader(nil)); err != nil || msg != nil {
		t.Errorf("no frame (a status alone): %x, %v", msg, err)
	}
}

func TestTimeoutHeader(t *testing.T) {
	for d, want := range map[time.Duration]string{
		-time.Second: "1n", 0: "1n", 1500 * time.Nanosecond: "1500n", 2 * time.Second: "2000000u",
		99999999 * time.Nanosecond: "99999999n", 100 * time.Second: "100000m", 30 * time.Hour: "108000S",
	} {
		if got := timeoutHeader(d); got != want {
			t.Errorf("timeoutHeader(%v) = %q, want %q", d, got, want)
		}
	}
}

// TestListsAndStatuses: PodUID and PodContainers through a real
// gRPC server; a status other than NotFound keeps its code's meaning and
// its message (grpc-go percent-encodes it); the deadline reaches the
// runtime (grpc-timeout).
func TestListsAndStatuses(t *testing.T) {
	rt := testRuntime()
	src := New(serve(t, rt))
	defer src.Close()
	ctx := context.Background()
	if uid, err := src.PodUID(ctx, "monitoring", "node-exporter-x2x"); err != nil || uid != podUID {
		t.Errorf("PodUID(monitoring/node-exporter-x2x) = %q, %v", uid, err)
	}
	if uid, err := src.PodUID(ctx, "monitoring", "gone"); !errors.Is(err, attribution.ErrNotFound) {
		t.Errorf("PodUID(monitoring/gone) = %q, %v; want ErrNotFound", uid, err)
	}
	ids, err := src.PodContainers(ctx, podUID)
	if want := []string{oldSandbox, sandboxID, exporterID}; err != nil || !slices.Equal(ids, want) {
		t.Errorf("PodContainers = %v, %v; want %v", ids, err, want)
	}
	rt.failWith = status.Error(codes.Unavailable, "runtime is shutting down: 100% busy")
	_, err = src.PodContainers(ctx, podUID)
	if err == nil || errors.Is(err, attribution.ErrNotFound) || attribution.IsTimeout(err) ||
		!strings.Contains(err.Error(), "code = 14 desc = runtime is shutting down: 100% busy") {
		t.Errorf("an Unavailable runtime: %v", err)
	}
	dctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := src.Container(dctx, exporterID); err != nil {
		t.Fatal(err)
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	if last := rt.calls[len(rt.calls)-1]; last != "ContainerStatus "+exporterID+" (with a deadline)" {
		t.Errorf("the runtime saw %q: the caller's deadline did not reach it", last)
	}
}

// TestRuntimeRestarted: a runtime that stops and starts again on the
// same socket is reached again; while it is down, calls fail (not hang).
func TestRuntimeRestarted(t *testing.T) {
	sock := filepath.Join(t.TempDir(), "containerd.sock")
	start := func() (stop func()) {
		ln, err := net.Listen("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		srv := grpc.NewServer()
		runtimeapi.RegisterRuntimeServiceServer(srv, testRuntime())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = srv.Serve(ln)
		}()
		return func() {
			srv.Stop()
			<-done
			_ = os.Remove(sock)
		}
	}
	stop := start()
	src := New(sock)
	defer src.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := src.Container(ctx, exporterID); err != nil {
		t.Fatal(err)
	}
	stop()
	if _, err := src.Container(ctx, exporterID); err == nil || errors.Is(err, attribution.ErrNotFound) {
		t.Errorf("runtime down: %v, want an error", err)
	}
	stop = start()
	defer stop()
	if c, err := src.Container(ctx, exporterID); err != nil || c.Pod != "node-exporter-x2x" {
		t.Errorf("runtime back: %+v, %v", c, err)
	}
}
