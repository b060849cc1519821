package privtest

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// EnvRequire is the variable that turns skips into failures.
const EnvRequire = "MNTLEAK_REQUIRE_BPF"

// Require skips (or, under MNTLEAK_REQUIRE_BPF=1, fails) t unless the test
// runs as root on a kernel with BTF.
func Require(t testing.TB) {
	t.Helper()
	if reason := missing(); reason != "" {
		unavailable(t, reason)
	}
}

// RequireCommands is Require for external programs a test runs.
func RequireCommands(t testing.TB, names ...string) {
	t.Helper()
	for _, name := range names {
		if _, err := exec.LookPath(name); err != nil {
			unavailable(t, "command "+name+" not found")
		}
	}
}

func unavailable(t testing.TB, reason string) {
	t.Helper()
	if os.Getenv(EnvRequire) == "1" {
		t.Fatalf("privileged test cannot run: %s (%s=1)", reason, EnvRequire)
	}
	t.Skipf("skipping privileged test: %s (set %s=1 to fail instead)", reason, EnvRequire)
}

func missing() string {
	if os.Geteuid() != 0 {
		return "not running as root"
	}
	if _, err := os.Stat("/sys/kernel/btf/vmlinux"); err != nil {
		return "no kernel BTF at /sys/kernel/btf/vmlinux"
	}
	return ""
}

// MountNS returns the inode of the mount namespace of pid ("self" allowed).
func MountNS(t testing.TB, pid string) uint32 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+pid+"/ns/mnt", &st); err != nil {
		t.Fatalf("stat mount namespace of %s: %v", pid, err)
	}
	return uint32(st.Ino)
}

// Mount mounts and registers a lazy unmount as cleanup.
func Mount(t testing.TB, source, target, fstype string, flags uintptr, data string) {
	t.Helper()
	if err := unix.Mount(source, target, fstype, flags, data); err != nil {
		t.Fatalf("mount %s on %s: %v", source, target, err)
	}
	t.Cleanup(func() { _ = unix.Unmount(target, unix.MNT_DETACH) })
}

// Mkdir creates dir (and parents) and returns it.
func Mkdir(t testing.TB, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// Run runs a command and fails the test if it fails.
func Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// Holder is a process that keeps a mount namespace alive.
type Holder struct {
	Cmd   *exec.Cmd
	PID   int
	MntNS uint32
}

// StartHolder runs `unshare -m --propagation <prop> sh -c "<script>; echo
// ready; exec sleep 600"` and waits until the script has run. The holder is
// killed (by pid) at cleanup, which frees its namespace and its mounts.
func StartHolder(t testing.TB, propagation, script string) *Holder {
	t.Helper()
	return StartHolderAs(t, propagation, script, "sleep")
}

// StartHolderAs is StartHolder with the holder exec'ing program (a copy of
// sleep under another name gives it another comm) instead of sleep.
func StartHolderAs(t testing.TB, propagation, script, program string) *Holder {
	t.Helper()
	return startHolder(t, nil, propagation, script, program)
}

// Node is a mount namespace of a test's own, made rshared as systemd makes
// the root: mounts made in it are copied by no namespace that other tests,
// running meanwhile, create from the real host namespace.
type Node struct{ *Holder }

// StartNode starts a node namespace; it goes with its holder at cleanup.
func StartNode(t testing.TB) Node {
	t.Helper()
	return Node{StartHolder(t, "shared", "true")}
}

// Run runs a command inside the node's mount namespace.
func (n Node) Run(t testing.TB, name string, args ...string) string {
	t.Helper()
	return Run(t, "nsenter", append([]string{"-t", strconv.Itoa(n.PID), "-m", "--", name}, args...)...)
}

// StartHolder starts a holder namespace copied from the node's.
func (n Node) StartHolder(t testing.TB, propagation, script string) *Holder {
	t.Helper()
	return startHolder(t, []string{"nsenter", "-t", strconv.Itoa(n.PID), "-m", "--"}, propagation, script, "sleep")
}

func startHolder(t testing.TB, prefix []string, propagation, script, program string) *Holder {
	t.Helper()
	RequireCommands(t, "unshare", "sh", "sleep", "nsenter", "findmnt")
	if propagation == "private" {
		script = dropTestNodeMounts + script
	}
	argv := append(append([]string(nil), prefix...), "unshare", "-m", "--propagation", propagation, "sh", "-c",
		script+" && echo ready && exec "+program+" 600")
	cmd := exec.Command(argv[0], argv[1:]...)
	StartReady(t, cmd, 10*time.Second)
	h := &Holder{Cmd: cmd, PID: cmd.Process.Pid}
	h.MntNS = MountNS(t, strconv.Itoa(h.PID))
	return h
}

// dropTestNodeMounts, run first in a private holder namespace, detaches
// there the mounts of the test suite's Kubernetes node (the kubelet's
// root, containerd's state and root: e2e/k8snode's paths). Packages run
// side by side: a private copy of a pod's volume in another test's
// namespace is a real leak, and kept a Kubernetes test's pod Terminating
// until that test's cleanup failed (deploy/incluster, 'pod plugin-shop/web
// still there 30s after its deletion', two namespaces of cmd/mntleak's
// release tests holding its volume). Only in a private namespace: an
// unmount propagates to the peers of the mount's parent, so in a shared
// node (whose copies of the kubelet's root are peers of the host's) it
// would unmount the host's pod volumes; a private namespace has no peers.
// A node and a slave keep them: they receive the host's unmounts.
const dropTestNodeMounts = `findmnt -rn -o TARGET | grep -E '^(/var/lib/kubelet|/run/mntleak-k8s|/var/lib/mntleak-k8s)(/|$)' | sort -r |
while read -r m; do mount --make-private "$m" 2>/dev/null && umount -l "$m" 2>/dev/null; done; `

// StartReady starts cmd, kills it at cleanup, and waits at most timeout
// for its first line of output to be "ready". Its stderr is the test's.
func StartReady(t testing.TB, cmd *exec.Cmd, timeout time.Duration) {
	t.Helper()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v: %v", cmd.Args, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	ready := make(chan error, 1)
	go func() {
		line, err := bufio.NewReader(stdout).ReadString('\n')
		if err == nil && strings.TrimSpace(line) != "ready" {
			err = fmt.Errorf("unexpected output %q", line)
		}
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatalf("%v: %v", cmd.Args, err)
		}
	case <-time.After(timeout):
		t.Fatalf("%v not ready after %v", cmd.Args, timeout)
	}
}

// LoopDevice attaches a fresh ext4 image of sizeMiB and returns the device
// path; it is detached at cleanup.
func LoopDevice(t testing.TB, sizeMiB int) string {
	t.Helper()
	RequireCommands(t, "losetup", "mkfs.ext4")
	img := t.TempDir() + "/disk.img"
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(int64(sizeMiB) << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
	Run(t, "mkfs.ext4", "-q", "-F", img)
	dev := strings.TrimSpace(Run(t, "losetup", "--find", "--show", "--partscan", img))
	t.Cleanup(func() {
		// A holder killed just before may still be releasing the device.
		for i := 0; i < 50; i++ {
			if exec.Command("losetup", "-d", dev).Run() == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("losetup -d %s kept failing", dev)
	})
	return dev
}

// CopyBinary copies the program at src (a path or a name on PATH) to
// dst, mode 0755: a copy under another name runs with another comm.
func CopyBinary(t testing.TB, src, dst string) string {
	t.Helper()
	path, err := exec.LookPath(src)
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o755); err != nil {
		t.Fatal(err)
	}
	return dst
}

// ZramDevice adds a zram disk of sizeMiB with an ext4 filesystem and
// returns its id; at cleanup it is reset and removed (retried while a
// holder killed just before still releases it).
func ZramDevice(t testing.TB, sizeMiB int) int {
	t.Helper()
	RequireCommands(t, "mkfs.ext4")
	b, err := os.ReadFile("/sys/class/zram-control/hot_add")
	if err != nil {
		unavailable(t, "no zram: "+err.Error())
	}
	id, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatalf("zram hot_add answered %q", b)
	}
	dir := fmt.Sprintf("/sys/block/zram%d/", id)
	t.Cleanup(func() {
		for i := 0; i < 50; i++ {
			if os.WriteFile(dir+"reset", []byte("1"), 0) == nil &&
				os.WriteFile("/sys/class/zram-control/hot_remove", []byte(strconv.Itoa(id)), 0) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
		t.Errorf("zram%d kept failing to reset and hot_remove", id)
	})
	if err := os.WriteFile(dir+"disksize", []byte(strconv.Itoa(sizeMiB<<20)), 0); err != nil {
		t.Fatalf("zram%d disksize: %v", id, err)
	}
	Run(t, "mkfs.ext4", "-q", "-F", fmt.Sprintf("/dev/zram%d", id))
	return id
}
