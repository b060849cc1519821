package k8s

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestReleaseRefusesAPodVolume (issue 26's matrix: a running pod's
// volume): a pod with a Memory emptyDir (the kubelet's tmpfs on the node,
// bound by runc into the container at /data) and one with a disk emptyDir
// (a directory of the node's disk bound there). release --apply --force,
// run on the node without a ledger, is aimed at the volume by every form
// that applies: the tmpfs's path on the node, its device, and the
// container's namespace with the mount id of its /data (why --json about
// a healthy volume is a "held" report, not a finding: --finding takes
// none of it, exit 2). Each is refused; the pods keep running, the container's
// /data is the same mount and holds the pod's data, the node's tmpfs is
// still mounted.
func TestReleaseRefusesAPodVolume(t *testing.T) {
	n := k8snode.Up(t)
	bin := privtest.Binary(t)
	const ns = "release"
	n.CreateNamespace(t, ns)
	mem, disk := k8snode.MemoryEmptyDirPod(ns, "cache"), k8snode.EmptyDirPod(ns, "scratch")
	n.Apply(t, mem.Manifest)
	n.Apply(t, disk.Manifest)
	cache := n.WaitPodRunning(t, ns, mem.Name)
	n.WaitPodRunning(t, ns, disk.Name)
	memPID := n.ContainerPID(t, ns, mem.Name, "main")
	diskPID := n.ContainerPID(t, ns, disk.Name, "main")
	hostDir := mem.HostDir(cache.UID)
	dev := strings.TrimSpace(privtest.Run(t, "findmnt", "-n", "-o", "MAJ:MIN", hostDir))
	for _, tc := range []struct {
		name string
		pid  int // the container whose /data must stay
		w    k8snode.Workload
		args []string
		want string
	}{
		{"the tmpfs's path on the node", memPID, mem, []string{hostDir}, "not a leak (in-use)"},
		{"the tmpfs's device", memPID, mem, []string{dev}, "not a leak (in-use)"},
		{"the container's copy of the tmpfs", memPID, mem, copyArgs(t, memPID), "not a leak (in-use)"},
		// Refused as in use (the copy's device is the node's root disk,
		// which processes use) or by the tables (still mounted on the
		// node): which comes first depends on what the node runs then.
		{"the container's bind of the disk emptyDir", diskPID, disk, copyArgs(t, diskPID), "not a leak"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := mountLine(t, tc.pid, "/data")
			cmd := exec.Command(bin, append([]string{"release", "--state-dir", "", "--journald-socket", "", "--apply", "--force"}, tc.args...)...)
			out, _ := cmd.CombinedOutput()
			code := cmd.ProcessState.ExitCode()
			t.Logf("release %s: exit %d\n%s", strings.Join(tc.args, " "), code, out)
			if code != 1 || !strings.Contains(string(out), "refused: ") || !strings.Contains(string(out), tc.want) || strings.Contains(string(out), "released:") {
				t.Fatalf("exit %d, want 1 and refused with %q:\n%s", code, tc.want, out)
			}
			if after := mountLine(t, tc.pid, "/data"); after != before {
				t.Errorf("the container's /data: %q became %q", before, after)
			}
			b, err := os.ReadFile("/proc/" + strconv.Itoa(tc.pid) + "/root/data/" + tc.w.File)
			if got := strings.TrimSpace(string(b)); err != nil || got != tc.w.Content {
				t.Errorf("the pod's %s: %q (%v), want %q", tc.w.File, got, err, tc.w.Content)
			}
			if syscall.Kill(tc.pid, 0) != nil || n.GetPod(t, ns, tc.w.Name).Phase != "Running" {
				t.Errorf("pod %s/%s stopped running", ns, tc.w.Name)
			}
		})
	}
	if out, err := exec.Command("findmnt", "-n", "-o", "MAJ:MIN", hostDir).Output(); err != nil || strings.TrimSpace(string(out)) != dev {
		t.Errorf("the node's tmpfs at %s: %q (%v), want %s", hostDir, out, err, dev)
	}
}

// copyArgs names the container's /data by its namespace and mount id, as
// a finding's release command does.
func copyArgs(t *testing.T, pid int) []string {
	t.Helper()
	mntns, err := k8snode.MountNS(pid)
	if err != nil {
		t.Fatal(err)
	}
	_, id := mountLineID(t, pid, "/data")
	return []string{"--mntns", strings.TrimSuffix(strings.TrimPrefix(mntns, "mnt:["), "]"), "--mount-id", strconv.Itoa(id)}
}

// mountLine is the line of pid's mountinfo of the top mount at path (as
// the container sees it).
func mountLine(t *testing.T, pid int, path string) string {
	t.Helper()
	line, _ := mountLineID(t, pid, path)
	return line
}

func mountLineID(t *testing.T, pid int, path string) (string, int) {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	line, id := "", 0
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) > 4 && f[4] == path {
			line = l
			id, _ = strconv.Atoi(f[0])
		}
	}
	if line == "" {
		t.Fatalf("no mount at %s in /proc/%d/mountinfo", path, pid)
	}
	return line, id
}
