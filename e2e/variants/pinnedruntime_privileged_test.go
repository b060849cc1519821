package variants

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/findingset"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

// How a runtime's pinned namespace is timed (besides a cell's hold and
// whether it was made before tracing).
const (
	runtimeGoneFirst = "runtime-gone-first" // the runtime exits before the failure: only the bind keeps the namespace
	// controls: nothing may be found
	unmountedByTheRuntime = "unmounted-by-the-runtime" // the runtime unmounts the device first
	namespaceReleased     = "namespace-released"       // the runtime exits and the bind is unmounted: the namespace dies with its copy
)

// runtimeCell is one way a runtime confined in a namespace of its own,
// kept by a bind of its nsfs file, holds a device it mounted there: how
// the runtime holds it (a member, or pinned by its cwd, a file, a mapping,
// its root in the device's mount), whether the namespace and the runtime
// predate tracing, and the timing.
type runtimeCell struct {
	hold     string
	predates bool
	timing   string
}

func (c runtimeCell) name() string {
	n := "traced"
	if c.predates {
		n = "predates"
	}
	if c.timing == unmountedByTheRuntime || c.timing == namespaceReleased {
		return "control/" + c.timing
	}
	n += "/" + c.hold
	if c.timing != "" {
		n += "/" + c.timing
	}
	return n
}

// TestRuntimeInAPinnedNamespace (issue 28, item 4): a runtime confined in a
// mount namespace of its own, kept by a bind of its nsfs file under
// /run/…/ns/ (as snapd keeps a snap's at /run/snapd/ns/SNAP.mnt): the
// namespace is made by a process that exits (snap-confine), the runtime
// enters it by that file (setns) and mounts a device there; the node's
// tables show none of it. The node's mkfs of the device fails with EBUSY:
// the one finding names the namespace, the runtime in it (a member, or the
// pinner by its cwd, a file, a mapping, its root) and the bind that keeps
// it (stopping the runtime alone does not free the namespace); made before
// tracing, the namespace is inferred. A runtime gone before the failure
// leaves the bind alone: no process is named (and made before tracing,
// nothing says who made it: unknown). The controls: the runtime unmounts
// the device first, or it exits and the bind is unmounted (the namespace
// dies); the node's mkfs goes through, and past the settle window no
// finding names the device, and the oracle finds it held nowhere.
func TestRuntimeInAPinnedNamespace(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "mkfs.ext4", "losetup", "sh", "sleep", "taskset", "busybox", "chroot")
	var cells []runtimeCell
	for _, predates := range []bool{false, true} {
		for _, h := range []string{member, cwd, fd, mapped, root} {
			cells = append(cells, runtimeCell{hold: h, predates: predates})
		}
		cells = append(cells, runtimeCell{hold: member, predates: predates, timing: runtimeGoneFirst})
	}
	cells = append(cells, runtimeCell{hold: member, timing: unmountedByTheRuntime}, runtimeCell{hold: member, timing: namespaceReleased})
	for _, c := range cells {
		t.Run(c.name(), func(t *testing.T) { runtimeInAPinnedNamespace(t, c) })
	}
}

// pinnedRuntime is a cell's runtime: its namespace's bind, the device's
// mount point there, and the runtime's process.
type pinnedRuntime struct {
	file, lib string
	kept      uint32
	id        uint64 // the namespace's birth id
	cmd       *exec.Cmd
}

// startPinnedRuntime makes the namespace kept by a bind under run/ns and
// starts the runtime in it: it mounts dev and holds it the cell's way.
func startPinnedRuntime(t *testing.T, node privtest.Node, c runtimeCell, dev string) pinnedRuntime {
	t.Helper()
	run := "/run/mntleak-issue28-" + strconv.Itoa(os.Getpid()) + "-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	nsDir := filepath.Join(run, "ns")
	r := pinnedRuntime{file: filepath.Join(nsDir, "runtime.mnt"), lib: filepath.Join(run, "lib")}
	for _, d := range []string{nsDir, r.lib} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { os.RemoveAll(run) })
	// The bind of an nsfs file must not sit on a shared mount (snapd makes
	// /run/snapd/ns a private bind of itself for the same reason).
	node.Run(t, "mount", "--bind", nsDir, nsDir)
	node.Run(t, "mount", "--make-private", nsDir)
	if err := os.WriteFile(r.file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	r.kept = node.KeepNamespace(t, r.file)
	r.cmd = exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "nsenter", "--mount="+r.file, "--",
		"sh", "-c", "mount "+dev+" "+r.lib+" && echo data >"+r.lib+"/file && cp "+busybox(t)+" "+r.lib+"/busybox && "+holdScript(c.hold, r.lib))
	privtest.StartReady(t, r.cmd, 10*time.Second)
	// nsenter and sh exec: the runtime is the process started.
	if ns := privtest.MountNS(t, strconv.Itoa(r.cmd.Process.Pid)); ns != r.kept {
		t.Fatalf("the runtime runs in mnt:[%d], want the kept mnt:[%d]", ns, r.kept)
	}
	r.id = findingset.BirthID(t, r.cmd.Process.Pid)
	return r
}

func runtimeInAPinnedNamespace(t *testing.T, c runtimeCell) {
	dev := privtest.LoopDevice(t, 8)
	node := privtest.StartNode(t)
	var l *live
	if !c.predates {
		l = startTracing(t)
	}
	r := startPinnedRuntime(t, node, c, dev)
	runtime := r.cmd.Process.Pid
	if c.predates {
		l = startTracing(t)
	}
	l.holderSeen(t)
	// The runtime's namespace, a private copy of the node's, also holds
	// copies of whatever else the node had (another package's volumes),
	// named in their findings: the cell's findings are those about its
	// device and mount point.
	o := objects{paths: []string{dev, r.lib}}
	stop := func() { // reaped: no zombie is left in the namespace
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	}
	switch c.timing {
	case unmountedByTheRuntime, namespaceReleased:
		if c.timing == unmountedByTheRuntime {
			node.Run(t, "nsenter", "--mount="+r.file, "--", "umount", r.lib)
		} else {
			stop()
			node.Run(t, "umount", r.file)
		}
		node.Run(t, "mkfs.ext4", "-q", "-F", dev)
		l.caughtUp(t, 60*time.Second) // a false finding has had its events
		control(t, l, o)
		l.controlDevices(t, o)
		return
	case runtimeGoneFirst:
		stop()
		time.Sleep(200 * time.Millisecond)
	}
	if err := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", dev).Run(); err == nil {
		t.Fatal("mkfs.ext4 of the device the runtime mounted succeeded")
	}
	l.caughtUp(t, 60*time.Second)
	privtest.AfterLeakSettle(t)
	l.settle(t, false)
	exactFindings(t, l.all(), o, []expected{runtimeWant(c, runtime, r)})
	fs := l.about(dev, r.lib)
	if len(fs) != 1 {
		return
	}
	f, bind := fs[0], "the bind of its nsfs file at "+r.file
	t.Log(f.Line())
	h := f.Holders[0]
	if h.MntNS != r.kept || !strings.HasPrefix(h.KeptBy, bind+" in ") {
		t.Errorf("holder mnt:[%d] kept by %q, want mnt:[%d] kept by %s", h.MntNS, h.KeptBy, r.kept, bind)
	}
	if !strings.Contains(f.Summary, bind) || !strings.Contains(f.Fix, "umount "+r.file) {
		t.Errorf("the summary and fix do not name the bind that keeps mnt:[%d] beyond its runtime (%s):\n%s", r.kept, r.file, f.Line())
	}
}

// runtimeWant is the one finding a held cell expects: mkfs's failure,
// unshare naming the runtime (a member, or the pinner); with the runtime
// gone, no process, and made before tracing nothing says who made the
// namespace: unknown.
func runtimeWant(c runtimeCell, runtime int, r pinnedRuntime) expected {
	w := expected{kind: finding.KindFailure, syscall: "openat", cause: finding.CauseUnshare,
		holder: holder{pid: runtime, ns: r.kept, id: r.id}, role: finding.RoleMember, inferred: c.predates, fix: runtime}
	if c.hold != member {
		w.role = finding.RolePinner
	}
	if c.timing == runtimeGoneFirst {
		w.holder.pid, w.role, w.fix = 0, "", 0
		if c.predates {
			w.cause = finding.CauseUnknown
		}
	}
	return w
}
