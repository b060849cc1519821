package k8snode

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// Timeouts of the node's operations, measured with room (a pod runs in
// 2-3 s here, and goes in 3-5 s).
const (
	// PodStart is how long a pod has to run.
	PodStart = 90 * time.Second
	// StuckAfter is how long DeletePod waits for a pod to go before it
	// calls it stuck.
	StuckAfter     = 30 * time.Second
	kubectlTimeout = 2 * time.Minute
)

// Bin is the path of one of the node's binaries (kubectl, kubelet, ...).
func Bin(name string) string {
	return filepath.Join(CacheDir, "v"+Version, "bin", name)
}

// KubectlErr runs kubectl against the node with stdin (may be nil) and
// returns its standard output; the error carries its standard error.
func (n *Node) KubectlErr(stdin []byte, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, Bin("kubectl"), append([]string{"--kubeconfig", n.Kubeconfig}, args...)...)
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// Kubectl is KubectlErr that fails the test on an error.
func (n *Node) Kubectl(t testing.TB, args ...string) string {
	t.Helper()
	out, err := n.KubectlErr(nil, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Apply creates or updates the object (kubectl apply) and, for a pod,
// deletes it at cleanup unless the test deleted it already; a pod that
// stays stuck then fails the test.
func (n *Node) Apply(t testing.TB, m Manifest) {
	t.Helper()
	if _, err := n.KubectlErr(m.YAML(), "apply", "-f", "-"); err != nil {
		t.Fatalf("apply %s %s/%s: %v", m.Kind, m.Namespace, m.Name, err)
	}
	if m.Kind != "Pod" {
		return
	}
	t.Cleanup(func() {
		if _, ok := n.pod(m.Namespace, m.Name); !ok {
			return
		}
		if n.DeletePod(t, m.Namespace, m.Name, true) {
			t.Errorf("pod %s/%s still there %v after its deletion (cleanup)", m.Namespace, m.Name, StuckAfter)
		}
	})
}

// Pod is what a test reads of a pod's status.
type Pod struct {
	UID               string
	Phase             string
	DeletionTimestamp string            // set once its deletion began
	Containers        map[string]string // container name → containerd id
}

// pod reads the pod; ok is false when it does not exist (or cannot be
// read).
func (n *Node) pod(ns, name string) (Pod, bool) {
	out, err := n.KubectlErr(nil, "get", "pod", "-n", ns, name, "-o", "json", "--ignore-not-found")
	if err != nil || strings.TrimSpace(out) == "" {
		return Pod{}, false
	}
	var p struct {
		Metadata struct {
			UID               string `json:"uid"`
			DeletionTimestamp string `json:"deletionTimestamp"`
		} `json:"metadata"`
		Status struct {
			Phase             string `json:"phase"`
			ContainerStatuses []struct {
				Name        string `json:"name"`
				ContainerID string `json:"containerID"`
			} `json:"containerStatuses"`
		} `json:"status"`
	}
	if json.Unmarshal([]byte(out), &p) != nil {
		return Pod{}, false
	}
	got := Pod{UID: p.Metadata.UID, Phase: p.Status.Phase, DeletionTimestamp: p.Metadata.DeletionTimestamp, Containers: map[string]string{}}
	for _, c := range p.Status.ContainerStatuses {
		_, id, _ := strings.Cut(c.ContainerID, "://")
		got.Containers[c.Name] = id
	}
	return got, true
}

// GetPod reads a pod; it fails the test when the pod is not there.
func (n *Node) GetPod(t testing.TB, ns, name string) Pod {
	t.Helper()
	p, ok := n.pod(ns, name)
	if !ok {
		t.Fatalf("pod %s/%s not found", ns, name)
	}
	return p
}

// WaitPodRunning waits up to PodStart for the pod's phase to be Running
// and returns it; it fails the test, with the pod's description, if not.
func (n *Node) WaitPodRunning(t testing.TB, ns, name string) Pod {
	t.Helper()
	var p Pod
	if !privtest.Poll(PodStart, func() bool {
		var ok bool
		p, ok = n.pod(ns, name)
		return ok && p.Phase == "Running"
	}) {
		desc, _ := n.KubectlErr(nil, "describe", "pod", "-n", ns, name)
		t.Fatalf("pod %s/%s not Running within %v (phase %q):\n%s", ns, name, PodStart, p.Phase, desc)
	}
	return p
}

// WaitPodGone reports whether the pod was gone from the API server within d.
func (n *Node) WaitPodGone(ns, name string, d time.Duration) bool {
	return privtest.Poll(d, func() bool {
		out, err := n.KubectlErr(nil, "get", "pod", "-n", ns, name, "-o", "name", "--ignore-not-found")
		return err == nil && strings.TrimSpace(out) == ""
	})
}

// DeletePod deletes the pod (grace period as its manifest says) and
// reports whether its .metadata.deletionTimestamp stays set: without wait,
// right after the request (true unless the pod went at once); with wait,
// after StuckAfter unless the pod is gone before, so true means stuck.
func (n *Node) DeletePod(t testing.TB, ns, name string, wait bool) bool {
	t.Helper()
	if _, err := n.KubectlErr(nil, "delete", "pod", "-n", ns, name, "--wait=false", "--ignore-not-found"); err != nil {
		t.Fatalf("delete pod %s/%s: %v", ns, name, err)
	}
	if wait && n.WaitPodGone(ns, name, StuckAfter) {
		return false
	}
	p, ok := n.pod(ns, name)
	return ok && p.DeletionTimestamp != ""
}

// ContainerPID is the host pid of a running pod container's first process
// (its runc init.pid in containerd's state).
func (n *Node) ContainerPID(t testing.TB, ns, pod, container string) int {
	t.Helper()
	id := n.GetPod(t, ns, pod).Containers[container]
	if id == "" {
		t.Fatalf("pod %s/%s has no container %s running", ns, pod, container)
	}
	file := filepath.Join(filepath.Dir(ContainerdSocket), "io.containerd.runtime.v2.task", "k8s.io", id, "init.pid")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("container %s of pod %s/%s: %v", container, ns, pod, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("container %s of pod %s/%s: %s: %v", container, ns, pod, file, err)
	}
	return pid
}

// ctr runs containerd's ctr against the node's containerd, namespace k8s.io.
func ctr(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), kubectlTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", ContainerdSocket, "-n", "k8s.io"}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// ImportImage imports an image archive (docker save / OCI layout tar) into
// the node's containerd, where pods with imagePullPolicy Never find it, and
// checks that ref is there. At cleanup (after the pods the test applied
// since are gone) every reference it added goes, those the CRI adds to it
// (sha256:ID) too: the node's containerd has what it had.
func (n *Node) ImportImage(t testing.TB, tarPath, ref string) {
	t.Helper()
	before := images(t)
	t.Cleanup(func() {
		for _, r := range images(t) {
			if slices.Contains(before, r) {
				continue
			}
			// Removing a name may take its sha256:ID along: not found is no error.
			if out, err := ctr("images", "rm", r); err != nil && !strings.Contains(out, "not found") {
				t.Errorf("remove image %s: %v", r, err)
			}
		}
		if after := images(t); !slices.Equal(after, before) {
			t.Errorf("the node's images: %q, want %q as before the test", after, before)
		}
	})
	if _, err := ctr("images", "import", tarPath); err != nil {
		t.Fatalf("import %s: %v", tarPath, err)
	}
	if got := images(t); !slices.Contains(got, ref) {
		t.Fatalf("import %s: no image %s in the node's containerd after it (has: %s)", tarPath, ref, strings.Join(got, " "))
	}
}

// images lists the image references in the node's containerd, sorted.
func images(t testing.TB) []string {
	t.Helper()
	out, err := ctr("images", "ls", "-q")
	if err != nil {
		t.Fatal(err)
	}
	refs := strings.Fields(out)
	slices.Sort(refs)
	return refs
}

// Events returns `kubectl get events -A` (oldest first) and the pods, for
// a test's log when it fails (Up registers that); errors are in the text.
func (n *Node) Events(t testing.TB) string {
	t.Helper()
	var b strings.Builder
	for _, args := range [][]string{
		{"get", "events", "-A", "--sort-by=.metadata.creationTimestamp", "-o", "wide"},
		{"get", "pods", "-A", "-o", "wide"},
	} {
		out, err := n.KubectlErr(nil, args...)
		b.WriteString(out)
		if err != nil {
			fmt.Fprintf(&b, "%v\n", err)
		}
	}
	return b.String()
}

// KubeletLog is the kubelet's log so far (the API server records no Event
// for a volume teardown that fails: the kubelet's log has it).
func (n *Node) KubeletLog(t testing.TB) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(n.LogDir, "kubelet.log"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("kubelet log: %v", err)
	}
	return string(b)
}

// CreateNamespace creates ns and waits for its default ServiceAccount (the
// controllers make it; pods are refused before it); at cleanup ns is
// deleted and waited for, so that the next test can create it again.
func (n *Node) CreateNamespace(t testing.TB, ns string) {
	t.Helper()
	n.Kubectl(t, "create", "namespace", ns)
	t.Cleanup(func() {
		if _, err := n.KubectlErr(nil, "delete", "namespace", ns, "--wait=true", "--timeout=90s"); err != nil {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
	privtest.WaitFor(t, 30*time.Second, "ServiceAccount "+ns+"/default", func() bool {
		out, err := n.KubectlErr(nil, "get", "serviceaccount", "-n", ns, "default", "-o", "name", "--ignore-not-found")
		return err == nil && strings.TrimSpace(out) != ""
	})
}
