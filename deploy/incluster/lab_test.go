package incluster

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/testkit/findinglog"
)

// repo is the repository's top, from this package's directory.
const repo = "../.."

// version is the repository's VERSION: the image's tag and the chart's
// appVersion.
func version(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repo, "VERSION"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// buildArchive is make image-tar into dir: the static binary, the image
// built by a private dockerd whose data root is in dir (started and
// stopped by the script: no engine is asked to answer), and the OCI
// archive. Nothing of that engine may stay: no process naming dir, no
// mount under it.
func buildArchive(t *testing.T, dir string) string {
	t.Helper()
	archive := filepath.Join(dir, "mntleak.oci.tar")
	engine := filepath.Join(dir, "engine")
	cmd := exec.Command(filepath.Join(repo, "deploy", "image", "image.sh"), "tar")
	cmd.Env = append(os.Environ(), "MNTLEAK_ENGINE_DIR="+engine, "DOCKER_HOST=unix://"+filepath.Join(dir, "no-engine.sock"), "MNTLEAK_IMAGE_TAR="+archive)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("image.sh tar: %v\n%s", err, out)
	}
	t.Logf("image.sh tar (binary, private dockerd, image, OCI archive): %v", time.Since(start).Round(100*time.Millisecond))
	if b, _ := os.ReadFile("/proc/self/mountinfo"); bytes.Contains(b, []byte(engine)) {
		t.Errorf("the build engine left mounts under %s", engine)
	}
	if pids := processesNaming(engine); len(pids) > 0 {
		t.Errorf("the build engine left processes %v", pids)
	}
	return archive
}

// processesNaming lists the processes whose command line names s.
func processesNaming(s string) []int {
	var out []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		if b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline"); err == nil && bytes.Contains(b, []byte(s)) {
			out = append(out, pid)
		}
	}
	return out
}

// helm is the real helm CLI (deploy/helm/helm.sh builds it once into its
// cache) run against the node's API server.
type helm struct{ bin, kubeconfig string }

func newHelm(t *testing.T, n *k8snode.Node) helm {
	t.Helper()
	out, err := exec.Command(filepath.Join(repo, "deploy", "helm", "helm.sh"), "path").Output()
	if err != nil {
		t.Fatalf("helm.sh path: %v", err)
	}
	return helm{bin: strings.TrimSpace(string(out)), kubeconfig: n.Kubeconfig}
}

func (h helm) run(args ...string) (string, error) {
	cmd := exec.Command(h.bin, append([]string{"--kubeconfig", h.kubeconfig}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("helm %s: %w\n%s", strings.Join(args, " "), err, out)
	}
	return string(out), nil
}

// pod is what the test reads of a pod.
type pod struct {
	Metadata struct {
		Name            string `json:"name"`
		UID             string `json:"uid"`
		OwnerReferences []struct {
			Kind       string `json:"kind"`
			Name       string `json:"name"`
			Controller bool   `json:"controller"`
		} `json:"ownerReferences"`
	} `json:"metadata"`
	Spec struct {
		NodeName           string `json:"nodeName"`
		ServiceAccountName string `json:"serviceAccountName"`
	} `json:"spec"`
	Status struct {
		Phase      string `json:"phase"`
		PodIP      string `json:"podIP"`
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
		ContainerStatuses []struct {
			Ready        bool   `json:"ready"`
			RestartCount int    `json:"restartCount"`
			Image        string `json:"image"`
		} `json:"containerStatuses"`
	} `json:"status"`
}

func (p pod) ready() bool {
	for _, c := range p.Status.Conditions {
		if c.Type == "Ready" {
			return c.Status == "True"
		}
	}
	return false
}

// pods lists the pods of ns with the label selector.
func pods(t *testing.T, n *k8snode.Node, ns, selector string) []pod {
	t.Helper()
	var list struct {
		Items []pod `json:"items"`
	}
	if err := json.Unmarshal([]byte(n.Kubectl(t, "get", "pods", "-n", ns, "-l", selector, "-o", "json")), &list); err != nil {
		t.Fatalf("pods of %s (%s): %v", ns, selector, err)
	}
	return list.Items
}

// logged is one line of the daemon's JSON log (stderr; kubectl logs
// interleaves the events it streams on stdout, which have no msg).
type logged = findinglog.Line

// podLog is the daemon's log lines in the pod's log so far.
func podLog(t *testing.T, n *k8snode.Node, ns, name string) []logged {
	t.Helper()
	out, err := n.KubectlErr(nil, "logs", "-n", ns, name)
	if err != nil {
		t.Fatal(err)
	}
	return findinglog.AllOf(out)
}

// objectRef is an Event's regarding or related.
type objectRef struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	UID       string `json:"uid"`
}

func (r *objectRef) String() string {
	if r == nil {
		return "none"
	}
	return r.Kind + " " + r.Namespace + "/" + r.Name + " " + r.UID
}

// event is an events.k8s.io/v1 Event as the API server returns it.
type event struct {
	Type                string     `json:"type"`
	Reason              string     `json:"reason"`
	Note                string     `json:"note"`
	ReportingController string     `json:"reportingController"`
	ReportingInstance   string     `json:"reportingInstance"`
	Regarding           objectRef  `json:"regarding"`
	Related             *objectRef `json:"related"`
}

// mntleakEvents lists the Events of ns that mntleak reported.
func mntleakEvents(t *testing.T, n *k8snode.Node, ns string) []event {
	t.Helper()
	var list struct {
		Items []event `json:"items"`
	}
	if err := json.Unmarshal([]byte(n.Kubectl(t, "get", "events.v1.events.k8s.io", "-n", ns, "-o", "json")), &list); err != nil {
		t.Fatalf("Events of %s: %v", ns, err)
	}
	var out []event
	for _, e := range list.Items {
		if e.ReportingController == "mntleak" {
			out = append(out, e)
		}
	}
	return out
}

// scrape is the value of the metric's sample whose labels contain
// labels, from a Prometheus text endpoint; -1 when there is none.
func scrape(t *testing.T, url, metric, labels string) float64 {
	t.Helper()
	client := http.Client{Timeout: 5 * time.Second}
	resp, err := client.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s %v", url, resp.Status, err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		name, rest, ok := strings.Cut(line, "{")
		if !ok || name != metric || !strings.Contains(rest, labels) {
			continue
		}
		f := strings.Fields(rest[strings.Index(rest, "}")+1:])
		if len(f) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(f[0], 64)
		if err != nil {
			t.Fatalf("scrape %s: %q: %v", url, line, err)
		}
		return v
	}
	return -1
}

// shareHostPath makes path a mount point of its own with shared
// propagation unless it lies on a shared or slave mount already, and
// undoes it at cleanup. On a real node systemd makes every mount shared;
// here / and /sys are private (no systemd), and containerd's CRI refuses a
// hostPath mounted HostToContainer (rslave) from a private mount ("path
// ... is mounted on / but it is not a shared or slave mount"). The
// kubelet's root is shared already: the kubelet makes it so.
func shareHostPath(t *testing.T, path string) {
	t.Helper()
	mounts, err := mountinfo.GetMounts(nil)
	if err != nil {
		t.Fatal(err)
	}
	var under *mountinfo.Info
	for _, m := range mounts {
		if (path == m.Mountpoint || m.Mountpoint == "/" || strings.HasPrefix(path, m.Mountpoint+"/")) &&
			(under == nil || len(m.Mountpoint) >= len(under.Mountpoint)) {
			under = m
		}
	}
	if under != nil && (strings.Contains(under.Optional, "shared:") || strings.Contains(under.Optional, "master:")) {
		return
	}
	if err := unix.Mount(path, path, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s on itself: %v", path, err)
	}
	t.Cleanup(func() {
		// Detached: a process started meanwhile (another test's daemon
		// reading /sys/kernel/btf/vmlinux) may have a file open on it.
		if err := unix.Unmount(path, unix.MNT_DETACH); err != nil {
			t.Errorf("umount %s: %v", path, err)
		}
	})
	if err := unix.Mount("", path, "", unix.MS_SHARED, ""); err != nil {
		t.Fatalf("make %s shared: %v", path, err)
	}
}
