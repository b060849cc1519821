package k8snode_test

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

const ns = "default"

// hostMounts lists the node's (this test's namespace's) mounts at or under dir.
func hostMounts(t *testing.T, dir string) []string {
	t.Helper()
	ms, err := k8snode.MountsUnder(os.Getpid(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.FSType+" "+m.Mountpoint)
	}
	return out
}

// nothingNaming fails the test if any mount namespace still has a mount
// whose mount point names uid (a pod's volumes, or a copy of them).
func nothingNaming(t *testing.T, what, uid string) {
	t.Helper()
	left, err := k8snode.MountsNaming(uid)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range left {
		t.Errorf("%s: still mounted: %s", what, m)
	}
}

// TestBidirectionalStuckPod (issue 15, scenario 1): a privileged pod with a
// Bidirectional hostPath of the kubelet root mounts a tmpfs inside another
// pod's disk emptyDir; that pod, deleted, stays with its deletionTimestamp
// set while the kubelet's teardown fails with unlinkat EBUSY (in its log
// only); unmounting the tmpfs on the node lets it go.
func TestBidirectionalStuckPod(t *testing.T) {
	n := k8snode.Up(t)
	victim := k8snode.EmptyDirPod(ns, "s1-victim")
	n.Apply(t, victim.Manifest)
	uid := n.WaitPodRunning(t, ns, victim.Name).UID
	mounter := k8snode.BidirectionalMounter(ns, "s1-mounter", victim, uid)
	// Runs before the victim's cleanup (cleanups run last first): a test
	// stopped half-way leaves no stuck pod.
	t.Cleanup(func() { _ = unix.Unmount(mounter.HostPath, unix.MNT_DETACH) })
	n.Apply(t, mounter.Manifest)
	n.WaitPodRunning(t, ns, mounter.Name)
	privtest.WaitFor(t, 20*time.Second, "tmpfs at "+mounter.HostPath+" on the node (Bidirectional)", func() bool {
		m := hostMounts(t, mounter.HostPath)
		return len(m) == 1 && strings.HasPrefix(m[0], "tmpfs ")
	})

	if !n.DeletePod(t, ns, victim.Name, false) {
		t.Fatalf("pod %s/%s: no deletionTimestamp after its deletion", ns, victim.Name)
	}
	busy := regexp.MustCompile(`unlinkat ` + regexp.QuoteMeta(mounter.HostPath) + `: device or resource busy`)
	var line string
	privtest.WaitFor(t, 60*time.Second, "kubelet log line "+busy.String(), func() bool {
		line = busy.FindString(n.KubeletLog(t))
		return line != ""
	})
	t.Logf("kubelet: ...%s", line)
	// The kubelet retries (backoff 0.5 s, doubling): the pod stays.
	time.Sleep(5 * time.Second)
	if p := n.GetPod(t, ns, victim.Name); p.DeletionTimestamp == "" {
		t.Fatalf("pod %s/%s: deletionTimestamp not set while its teardown fails", ns, victim.Name)
	}
	if got := len(busy.FindAllString(n.KubeletLog(t), -1)); got < 2 {
		t.Errorf("kubelet retried the teardown %d times in 5 s, want it to go on failing", got)
	}
	// What the API server says about it (1.37.2: nothing of the EBUSY).
	t.Logf("the victim's Events: %s", n.Kubectl(t, "get", "events", "-n", ns, "--field-selector", "involvedObject.name="+victim.Name,
		"-o", "jsonpath={range .items[*]}{.reason}: {.message}; {end}"))

	// Undo the mount on the node (it leaves the mounter's namespace too:
	// shared peers): the kubelet's next retry succeeds.
	if err := unix.Unmount(mounter.HostPath, 0); err != nil {
		t.Fatalf("umount %s: %v", mounter.HostPath, err)
	}
	if !n.WaitPodGone(ns, victim.Name, 90*time.Second) {
		t.Fatalf("pod %s/%s still there 90 s after its tmpfs was unmounted", ns, victim.Name)
	}
	nothingNaming(t, "the deleted victim", uid)
}

// TestPinnedMemoryEmptyDir (issue 15, scenario 2): a privileged pod with
// hostPath /var/lib/kubelet and mountPropagation None, started after a
// workload pod with a Memory emptyDir, has a private copy of the
// workload's tmpfs. The workload is deleted and goes: the kubelet unmounts
// the tmpfs on the node and removes its directory, which (6.x kernels)
// detaches the copy in the holder's namespace too. With a process keeping
// its cwd and a file there, that detached copy stays alive, the deleted
// pod's data readable; without, nothing is left anywhere.
func TestPinnedMemoryEmptyDir(t *testing.T) {
	n := k8snode.Up(t)
	for _, tc := range []struct {
		name   string
		pinned bool
	}{
		{"pinned", true},
		{"not-pinned", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			work := k8snode.MemoryEmptyDirPod(ns, "s2-work-"+tc.name)
			n.Apply(t, work.Manifest)
			uid := n.WaitPodRunning(t, ns, work.Name).UID
			dir := work.HostDir(uid)
			var st unix.Stat_t
			if err := unix.Stat(dir, &st); err != nil {
				t.Fatal(err)
			}
			if m := hostMounts(t, dir); len(m) != 1 || !strings.HasPrefix(m[0], "tmpfs ") {
				t.Fatalf("node mounts at %s: %q, want the workload's tmpfs", dir, m)
			}

			holder := k8snode.KubeletHostPathPod(ns, "s2-hostpath-"+tc.name)
			if tc.pinned {
				holder = k8snode.Pinner(ns, "s2-pinner", work, uid)
			}
			n.Apply(t, holder.Manifest)
			n.WaitPodRunning(t, ns, holder.Name)
			pid := n.ContainerPID(t, ns, holder.Name, "main")
			copyAt := "/host/kubelet" + strings.TrimPrefix(dir, k8snode.KubeletRoot)
			copies, err := k8snode.MountsUnder(pid, copyAt)
			if err != nil {
				t.Fatal(err)
			}
			if len(copies) != 1 || copies[0].FSType != "tmpfs" || unix.Mkdev(uint32(copies[0].Major), uint32(copies[0].Minor)) != st.Dev {
				t.Fatalf("holder pid %d: mounts at %s: %v, want a copy of the workload's tmpfs (dev %d:%d)", pid, copyAt, copies, unix.Major(st.Dev), unix.Minor(st.Dev))
			}
			t.Logf("holder pid %d has the copy: mount %d at %s", pid, copies[0].ID, copyAt)
			if tc.pinned {
				if mnt, err := k8snode.FDMountID(pid, 3); err != nil || mnt != copies[0].ID {
					t.Fatalf("holder's fd 3 is on mount %d (%v), want the copy %d", mnt, err, copies[0].ID)
				}
			}

			if n.DeletePod(t, ns, work.Name, true) {
				t.Fatalf("workload %s/%s stuck after its deletion", ns, work.Name)
			}
			if m := hostMounts(t, dir); len(m) != 0 {
				t.Errorf("node still has %q after the workload went", m)
			}
			left, err := k8snode.MountsUnder(pid, copyAt)
			if err != nil {
				t.Fatal(err)
			}
			if len(left) != 0 {
				t.Errorf("holder's namespace still lists %v: the kernel did not detach the copy", left)
			}
			nothingNaming(t, "after the workload went", uid)
			var cwd unix.Stat_t
			if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/cwd", &cwd); err != nil {
				t.Fatal(err)
			}
			if !tc.pinned {
				if cwd.Dev == st.Dev {
					t.Errorf("holder's cwd is on the workload's tmpfs, but it kept nothing")
				}
				return
			}
			// Pinned: the detached copy lives on, with the deleted pod's data.
			var fs unix.Statfs_t
			if err := unix.Statfs("/proc/"+strconv.Itoa(pid)+"/cwd", &fs); err != nil {
				t.Fatal(err)
			}
			if cwd.Dev != st.Dev || fs.Type != unix.TMPFS_MAGIC {
				t.Errorf("holder's cwd: dev %d:%d type %#x, want the workload's tmpfs %d:%d", unix.Major(cwd.Dev), unix.Minor(cwd.Dev), fs.Type, unix.Major(st.Dev), unix.Minor(st.Dev))
			}
			if mnt, err := k8snode.FDMountID(pid, 3); err != nil || mnt != copies[0].ID {
				t.Errorf("holder's fd 3 on mount %d (%v), want the detached copy %d", mnt, err, copies[0].ID)
			}
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/fd/3")
			if err != nil || strings.TrimSpace(string(b)) != work.Content {
				t.Errorf("deleted pod's %s read through the holder: %q (%v), want %q", work.File, b, err, work.Content)
			}
			link, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/cwd")
			t.Logf("after the workload went: holder's cwd %q on tmpfs %d:%d (mount %d, in no mount table), %s still reads %q",
				link, unix.Major(cwd.Dev), unix.Minor(cwd.Dev), copies[0].ID, work.File, strings.TrimSpace(string(b)))
		})
	}
}
