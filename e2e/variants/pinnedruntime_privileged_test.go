package variants

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

// TestRuntimeInAPinnedNamespace (issue 28, item 4): a runtime confined in a
// mount namespace of its own, kept by a bind of its nsfs file under
// /run/…/ns/ (as snapd keeps a snap's at /run/snapd/ns/SNAP.mnt): the
// namespace is made by a process that exits (snap-confine), the runtime
// enters it by that file (setns) and mounts a device there; the node's
// tables show none of it. The node's mkfs of the device fails with EBUSY:
// the one finding names the namespace, the runtime in it and the bind that
// keeps it (stopping the runtime alone does not free the namespace). The
// control: the runtime unmounts the device first; the node's mkfs goes
// through, and past the settle window no finding names the device.
func TestRuntimeInAPinnedNamespace(t *testing.T) {
	for _, control := range []bool{false, true} {
		name := "held"
		if control {
			name = "control_unmounted_by_the_runtime"
		}
		t.Run(name, func(t *testing.T) { runtimeInAPinnedNamespace(t, control) })
	}
}

func runtimeInAPinnedNamespace(t *testing.T, control bool) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "mkfs.ext4", "losetup", "sh", "sleep", "taskset")
	dev := privtest.LoopDevice(t, 8)
	node := privtest.StartNode(t)
	run := "/run/mntleak-issue28-" + strconv.Itoa(os.Getpid())
	nsDir := filepath.Join(run, "ns")
	lib := filepath.Join(run, "lib")
	for _, d := range []string{nsDir, lib} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	// The bind of an nsfs file must not sit on a shared mount (snapd makes
	// /run/snapd/ns a private bind of itself for the same reason).
	node.Run(t, "mount", "--bind", nsDir, nsDir)
	node.Run(t, "mount", "--make-private", nsDir)
	file := filepath.Join(nsDir, "runtime.mnt")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	l := startTracing(t)
	kept := node.KeepNamespace(t, file)
	rt := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "nsenter", "--mount="+file, "--",
		"sh", "-c", "mount "+dev+" "+lib+" && echo ready && exec sleep 600")
	privtest.StartReady(t, rt, 10e9)
	// nsenter and sh exec: the runtime is the process started.
	runtime := rt.Process.Pid
	if ns := privtest.MountNS(t, strconv.Itoa(runtime)); ns != kept {
		t.Fatalf("the runtime runs in mnt:[%d], want the kept mnt:[%d]", ns, kept)
	}
	if control {
		node.Run(t, "nsenter", "--mount="+file, "--", "umount", lib)
		node.Run(t, "mkfs.ext4", "-q", "-F", dev)
		privtest.AfterLeakSettle(t)
		l.settle(t, true)
		noFinding(t, l.all(), objects{paths: []string{dev, lib}, ns: []uint32{kept}})
		return
	}
	if err := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", dev).Run(); err == nil {
		t.Fatal("mkfs.ext4 of the device the runtime mounted succeeded")
	}
	privtest.AfterLeakSettle(t)
	l.settle(t, false)
	exactFindings(t, l.all(), objects{paths: []string{dev, lib}, ns: []uint32{kept}}, []expected{{kind: finding.KindFailure,
		syscall: "openat", cause: finding.CauseUnshare, holder: holder{pid: runtime, ns: kept}, role: finding.RoleMember, fix: runtime}})
	fs := l.about(dev, lib)
	if len(fs) != 1 {
		return
	}
	f, bind := fs[0], "the bind of its nsfs file at "+file
	t.Log(f.Line())
	h := f.Holders[0]
	if h.MntNS != kept || !strings.HasPrefix(h.KeptBy, bind+" in ") {
		t.Errorf("holder mnt:[%d] kept by %q, want mnt:[%d] kept by %s", h.MntNS, h.KeptBy, kept, bind)
	}
	if !strings.Contains(f.Summary, bind) || !strings.Contains(f.Fix, "umount "+file) {
		t.Errorf("the summary and fix do not name the bind that keeps mnt:[%d] beyond its runtime (%s):\n%s", kept, file, f.Line())
	}
}
