package k8snode_test

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/k8snode"
)

// TestDownUp: Down removes every trace of the node while pods run (the
// kubelet tears them down first), then Up brings it back from the cache.
// Gone: every daemon, shim and container process (by the pids seen before),
// every mount under the kubelet root or naming the node's paths in any
// namespace, the bridge, the kubelet's KUBE-* iptables chains, the kubepods
// cgroups, the node's state and the kubelet root; the sysctls are back.
func TestDownUp(t *testing.T) {
	n := k8snode.Up(t)
	work := k8snode.MemoryEmptyDirPod(ns, "down-work")
	n.Apply(t, work.Manifest)
	uid := n.WaitPodRunning(t, ns, work.Name).UID
	hp := k8snode.KubeletHostPathPod(ns, "down-hostpath")
	n.Apply(t, hp.Manifest)
	n.WaitPodRunning(t, ns, hp.Name)
	pids := []int{n.ContainerPID(t, ns, work.Name, "main"), n.ContainerPID(t, ns, hp.Name, "main")}
	files, _ := filepath.Glob(filepath.Join(k8snode.StateDir, "run", "*.pid"))
	for _, f := range files {
		if b, err := os.ReadFile(f); err == nil {
			if p, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil {
				pids = append(pids, p)
			}
		}
	}
	if len(pids) < 8 {
		t.Fatalf("pids of the node's daemons and containers: %v, want 6 daemons and 2 containers", pids)
	}
	sysctls := readSysctlsBefore(t)

	start := time.Now()
	n.Down(t)
	t.Logf("down in %.1fs", time.Since(start).Seconds())

	for _, p := range pids {
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(p) + "/stat"); err == nil && !zombie(b) {
			t.Errorf("pid %d still runs: %s", p, b)
		}
	}
	// Any other process of the node's programs that names its paths.
	daemons := map[string]bool{"etcd": true, "containerd": true, "containerd-shim-runc-v2": true, "kube-apiserver": true,
		"kube-controller-manager": true, "kube-scheduler": true, "kubelet": true}
	procs, _ := filepath.Glob("/proc/[0-9]*")
	for _, d := range procs {
		exe, _ := os.Readlink(d + "/exe")
		b, err := os.ReadFile(d + "/cmdline")
		if err == nil && daemons[filepath.Base(exe)] && strings.Contains(string(b), "mntleak-k8s") { // a zombie has neither
			t.Errorf("%s still runs: %s", d, strings.ReplaceAll(string(b), "\x00", " "))
		}
	}
	for _, s := range []string{k8snode.KubeletRoot, "/mntleak-k8s", uid} {
		nothingNaming(t, "after Down", s)
	}
	if _, err := net.InterfaceByName(k8snode.Bridge); err == nil {
		t.Errorf("bridge %s still there", k8snode.Bridge)
	}
	for _, table := range []string{"filter", "nat", "mangle"} {
		out, err := exec.Command("iptables", "-t", table, "-S").Output()
		if err != nil {
			t.Fatalf("iptables -t %s -S: %v", table, err)
		}
		if strings.Contains(string(out), "KUBE-") {
			t.Errorf("iptables table %s still has KUBE- rules:\n%s", table, out)
		}
	}
	for key, want := range sysctls {
		b, err := os.ReadFile("/proc/sys/" + strings.ReplaceAll(key, ".", "/"))
		if got := strings.Join(strings.Fields(string(b)), " "); err != nil || got != want {
			t.Errorf("sysctl %s = %q (%v), want %q as before the node", key, got, err, want)
		}
	}
	cgroups, _ := filepath.Glob("/sys/fs/cgroup/*/kubepods")
	for _, p := range append(cgroups, k8snode.StateDir, k8snode.KubeletRoot, filepath.Dir(filepath.Dir(k8snode.ContainerdSocket))) {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s still there", p)
		}
	}

	start = time.Now()
	k8snode.Up(t)
	t.Logf("cached start to node Ready (and its default ServiceAccount) in %.1fs", time.Since(start).Seconds())
}

// zombie reports whether a /proc/PID/stat is a zombie's (dead, not yet
// reaped: pid 1 here reaps the node's daemons a second or two late).
func zombie(stat []byte) bool {
	_, after, ok := strings.Cut(string(stat), ") ")
	return ok && strings.HasPrefix(after, "Z")
}

// readSysctlsBefore reads what up.sh saved before it started the node.
func readSysctlsBefore(t *testing.T) map[string]string {
	t.Helper()
	file := filepath.Join(k8snode.StateDir, "run", "sysctl-before")
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(line, " = "); ok {
			out[k] = strings.Join(strings.Fields(v), " ")
		}
	}
	if len(out) < 5 {
		t.Fatalf("%s: %d sysctls, want the 7 up.sh saves", file, len(out))
	}
	return out
}
