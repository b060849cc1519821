package k8snode

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// The node's fixed places (env.sh says the same).
const (
	// Version is the Kubernetes release the node runs (build.sh's default).
	Version = "1.37.2"
	// KubeletRoot is the kubelet's --root-dir, where pod volumes live
	// (pods/<uid>/volumes/<plugin>/<name>), as on a real node.
	KubeletRoot = "/var/lib/kubelet"
	// StateDir holds the node's PKI, configs, etcd, containerd's root and
	// the daemons' logs while it is up; Down removes it.
	StateDir = "/var/lib/mntleak-k8s"
	// ContainerdSocket is the node's containerd, apart from any Docker
	// Engine's (/run/containerd, /var/run/docker/containerd).
	ContainerdSocket = "/run/mntleak-k8s/containerd/containerd.sock"
	// Bridge is the CNI bridge the pods' veths join.
	Bridge = "mntleak-k8s0"
	// CacheDir keeps the built binaries and images between runs, by version.
	CacheDir = "/var/cache/mntleak-k8s"
)

// Environment variables between Main, Up and the scripts.
const (
	envOwner = "MNTLEAK_K8S_OWNER" // the pid of the test binary that may bring the node down
	envMain  = "MNTLEAK_K8S_MAIN"  // set by Main: Up refuses to start a node nobody stops
)

// Node is the running single-node Kubernetes: etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler, containerd and the kubelet.
type Node struct {
	Name       string // the node's name (the host name, lower case)
	Kubeconfig string // an admin (system:masters) kubeconfig
	LogDir     string // the daemons' logs: kubelet.log, containerd.log, ...
	Dir        string // e2e/k8snode/, where the scripts are
}

// scriptDir is the directory of this file: e2e/k8snode/ with its scripts.
func scriptDir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Main runs a package's tests around the node: before them it takes the
// node's lock (two test binaries never share or stop each other's node:
// the second waits) and builds what the cache lacks (build.sh, outside the
// tests' timeout); after them it brings the node down if a test of this
// binary brought it up, and fails the run if a trace stays. It runs the
// tests through privtest.Main. Without root it only runs the tests (Up
// skips them).
func Main(m *testing.M) int {
	if os.Geteuid() != 0 {
		return privtest.Main(m)
	}
	lock, err := lockNode()
	if err != nil {
		fmt.Fprintf(os.Stderr, "k8snode: %v\n", err)
		return 1
	}
	defer lock.Close()
	os.Setenv(envMain, "1")
	os.Setenv(envOwner, strconv.Itoa(os.Getpid()))
	adoptOrphan()
	if out, err := script(context.Background(), "build.sh"); err != nil {
		// Up fails each test that needs the node with this.
		fmt.Fprintf(os.Stderr, "k8snode: build.sh: %v\n%s", err, tail(out, 30))
	}
	code := privtest.Main(m)
	if owned() {
		start := time.Now()
		if out, err := script(context.Background(), "down.sh"); err != nil {
			fmt.Fprintf(os.Stderr, "k8snode: down.sh: %v\n%s", err, out)
			code = 1
		} else if testing.Verbose() {
			fmt.Printf("k8snode: node down in %.1fs\n", time.Since(start).Seconds())
		}
	}
	return code
}

// lockNode takes the exclusive flock on CacheDir/node.lock that a test
// binary holds while it may use the node, saying so once if it must wait.
func lockNode() (*os.File, error) {
	path := filepath.Join(CacheDir, "node.lock")
	if err := os.MkdirAll(CacheDir, 0o755); err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		fmt.Fprintf(os.Stderr, "k8snode: waiting for another test binary's node (%s)\n", path)
		if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
	}
	return f, nil
}

// owned reports whether this process brought the node up (up.sh records
// MNTLEAK_K8S_OWNER when it starts it).
func owned() bool {
	b, err := os.ReadFile(filepath.Join(StateDir, "run", "owner"))
	return err == nil && strings.TrimSpace(string(b)) == strconv.Itoa(os.Getpid())
}

// adoptOrphan makes this process the owner of a node whose owner died
// (a test binary killed by its timeout), so that Main brings it down after
// the tests. A node started by hand (make k8s-node) has no owner and stays.
// The caller holds the node's lock: no live test binary owns the node.
func adoptOrphan() {
	file := filepath.Join(StateDir, "run", "owner")
	b, err := os.ReadFile(file)
	if err != nil {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err == nil && pid != os.Getpid() && running(pid) {
		return // alive: cannot be, with the lock held, unless pids wrapped
	}
	if err := os.WriteFile(file, []byte(strconv.Itoa(os.Getpid())+"\n"), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "k8snode: adopt the node of a dead test binary: %v\n", err)
	}
}

// running reports whether pid is alive and not a zombie (pid 1 here reaps
// orphans a second or two late).
func running(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	_, after, ok := strings.Cut(string(b), ") ")
	return ok && !strings.HasPrefix(after, "Z")
}

// Up returns the node, bringing it up on the first call of the test binary
// (up.sh returns at once when it is already up). It skips the test without
// root or BTF, and fails it under MNTLEAK_REQUIRE_BPF=1 when the node
// cannot run. The package's TestMain must call Main.
func Up(t testing.TB) *Node {
	t.Helper()
	privtest.Require(t)
	privtest.RequireCommands(t, "etcd", "containerd", "runc", "ctr", "iptables", "openssl", "curl", "ip", "/usr/lib/cni/bridge")
	if os.Getenv(envMain) == "" {
		t.Fatal("k8snode.Up: the package's TestMain must call k8snode.Main (it stops the node after the tests)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	start := time.Now()
	out, err := script(ctx, "up.sh")
	if err != nil {
		t.Fatalf("k8snode: up.sh: %v\n%s", err, out)
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("k8snode: node up in %.1fs:\n%s", d.Seconds(), out)
	}
	n := &Node{
		Name:       nodeName(t),
		Kubeconfig: filepath.Join(StateDir, "etc", "admin.kubeconfig"),
		LogDir:     filepath.Join(StateDir, "logs"),
		Dir:        scriptDir(),
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("k8snode: events and pods at failure:\n%s", n.Events(t))
		}
	})
	return n
}

// Down brings the node down now (down.sh: every trace removed); the next
// Up brings it up again. Main does this after the tests; a test calls it
// to check what Down leaves. Its limit is 5 min: the kubelet gets 60 s to
// delete the pods, and each daemon 10 s to stop; a loaded machine (load 16)
// took over 3 min.
func (n *Node) Down(t testing.TB) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if out, err := script(ctx, "down.sh"); err != nil {
		t.Fatalf("k8snode: down.sh: %v\n%s", err, out)
	}
}

func nodeName(t testing.TB) string {
	t.Helper()
	h, err := os.Hostname()
	if err != nil {
		t.Fatalf("host name: %v", err)
	}
	return strings.ToLower(h)
}

// script runs one of the node's scripts and returns its combined output.
func script(ctx context.Context, name string, args ...string) (string, error) {
	path := filepath.Join(scriptDir(), name)
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), "K8S_VERSION="+Version)
	cmd.WaitDelay = 5 * time.Second // a daemon it started keeps no pipe of ours open for long
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("%s: %w", path, err)
	}
	return string(out), nil
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.SplitAfter(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "")
}
