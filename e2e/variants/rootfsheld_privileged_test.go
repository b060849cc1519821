package variants

import (
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

// How an agent's hold of a container's rootfs is timed.
const (
	agentGoneFirst = "agent-gone-first" // it exits before the shim's unmount: nothing fails (the control)
	agentGoneAfter = "agent-gone-after" // it exits after the failed unmount; the shim's retry succeeds
)

// rootfsCell is one way a process on the node holds a stopped
// container's rootfs (issue 28, item 5): how it holds it (cwd, fd, map,
// root), whether the rootfs was mounted and the agent started before
// tracing began, and when the agent goes.
type rootfsCell struct {
	hold     string
	predates bool
	timing   string
}

func (c rootfsCell) name() string {
	n := "traced"
	if c.predates {
		n = "predates"
	}
	n += "/" + c.hold
	if c.timing != "" {
		n += "/" + c.timing
	}
	return n
}

// holdScript is a shell script's tail that holds dir the way hold says
// (dir has file and busybox), says ready and sleeps: its process is the
// one started (each step execs).
func holdScript(hold, dir string) string {
	switch hold {
	case cwd:
		return "cd " + dir + " && echo ready && exec sleep 600"
	case fd:
		return "exec 3<" + dir + "/file && echo ready && exec sleep 600"
	case mapped:
		return "echo ready && exec " + dir + "/busybox sleep 600"
	case root:
		return "echo ready && exec chroot " + dir + " /busybox sleep 600"
	}
	return "echo ready && exec sleep 600"
}

// TestRootfsHeldAfterTheContainerStopped: containerd's runc shim (a copy
// of mount(8), then of umount(8), named containerd-shim) mounts a task's
// rootfs, an overlay, at its bundle (.../io.containerd.runtime.v2.task/
// k8s.io/app/rootfs) in the node's namespace; an agent on the node holds
// it by the node's path (its cwd, a file, a binary mapped, its root); the
// container has stopped and the shim's unmount fails with EBUSY. Exactly
// one rootfs-held failure names the agent as the pinner in the caller's
// own namespace, cites the shim's mount when it was traced, and its fix
// names only the agent; it agrees with the oracle. An agent gone after
// the failure leaves that one finding (the retry succeeds, nothing more);
// the controls: an agent gone before the unmount, which succeeds, and
// past the settle window nothing names the rootfs.
func TestRootfsHeldAfterTheContainerStopped(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "nsenter", "mount", "umount", "busybox", "chroot", "sh", "sleep")
	var cells []rootfsCell
	for _, predates := range []bool{false, true} {
		for _, h := range []string{cwd, fd, mapped, root} {
			cells = append(cells, rootfsCell{hold: h, predates: predates})
		}
	}
	for _, h := range []string{cwd, fd, mapped, root} {
		cells = append(cells, rootfsCell{hold: h, timing: agentGoneFirst})
	}
	cells = append(cells, rootfsCell{hold: fd, timing: agentGoneAfter}, rootfsCell{hold: cwd, predates: true, timing: agentGoneAfter})
	for _, c := range cells {
		t.Run(c.name(), func(t *testing.T) { rootfsHeld(t, c) })
	}
}

// containerRootfs is a task's bundle and the shim's two programs.
type containerRootfs struct {
	rootfs, mount, umount string
}

// mountRootfs mounts the task's rootfs as the shim does, an overlay of a
// snapshot holding file and busybox, in the node.
func mountRootfs(t *testing.T, node privtest.Node) containerRootfs {
	t.Helper()
	dir := t.TempDir()
	r := containerRootfs{
		rootfs: privtest.Mkdir(t, filepath.Join(dir, "run/containerd/io.containerd.runtime.v2.task/k8s.io/app/rootfs")),
		mount:  privtest.CopyBinary(t, "mount", filepath.Join(privtest.Mkdir(t, filepath.Join(dir, "bin")), "containerd-shim")),
		umount: privtest.CopyBinary(t, "umount", filepath.Join(privtest.Mkdir(t, filepath.Join(dir, "bin/u")), "containerd-shim")),
	}
	snap := filepath.Join(dir, "snapshots")
	lower := privtest.Mkdir(t, filepath.Join(snap, "1/fs"))
	privtest.Run(t, "sh", "-c", "echo data >"+lower+"/file && cp "+busybox(t)+" "+lower+"/busybox")
	upper, work := privtest.Mkdir(t, filepath.Join(snap, "2/fs")), privtest.Mkdir(t, filepath.Join(snap, "2/work"))
	node.Run(t, r.mount, "-t", "overlay", "overlay", "-o", "lowerdir="+lower+",upperdir="+upper+",workdir="+work, r.rootfs)
	t.Cleanup(func() {
		_ = exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", "-l", r.rootfs).Run()
	})
	return r
}

func rootfsHeld(t *testing.T, c rootfsCell) {
	node := privtest.StartNode(t)
	var l *live
	if !c.predates {
		l = startTracing(t)
		time.Sleep(100 * time.Millisecond)
	}
	r := mountRootfs(t, node)
	target := volumeTarget(t, node, r.rootfs, r.rootfs)
	agent := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "sh", "-c", holdScript(c.hold, r.rootfs))
	privtest.StartReady(t, agent, 10*time.Second)
	pid := agent.Process.Pid
	if c.predates {
		l = startTracing(t)
	}
	l.holderSeen(t)
	gone := func() { // reaped: no zombie is left to read
		_ = agent.Process.Kill()
		_ = agent.Wait()
	}
	shimUmount := func() ([]byte, error) {
		return exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", r.umount, r.rootfs).CombinedOutput()
	}
	o := objects{paths: []string{r.rootfs}}
	if c.timing == agentGoneFirst {
		gone()
		if out, err := shimUmount(); err != nil {
			t.Fatalf("the shim's unmount with no agent left: %v, %s", err, out)
		}
		l.caughtUp(t, 60*time.Second) // a false finding has had its events
		control(t, l, o)
		l.oracle.Control(t, target, o.paths)
		return
	}
	if out, err := shimUmount(); err == nil || !strings.Contains(string(out), "busy") {
		t.Fatalf("the shim's unmount of the held rootfs: %v, %s; want EBUSY", err, out)
	}
	l.caughtUp(t, 60*time.Second)
	want := findingset.Want{Kind: finding.KindFailure, Syscall: "umount2", Cause: finding.CauseRootfsHeld, PID: pid, Role: finding.RolePinner,
		NS: node.MntNS, Event: "mount", Fix: pid}
	if c.predates {
		want.Event, want.Own = "", true
	}
	if c.timing == agentGoneAfter {
		// The finding is made while the agent holds the rootfs (its fix
		// names a live process); once it is gone the retry succeeds, and
		// past the settle window nothing more is found.
		l.wait(r.rootfs, r.rootfs, 10*time.Second, func(*finding.Finding) bool { return true })
		findingset.Exact(t, o.set().Of(l.all()), []findingset.Want{want})
		before := len(o.set().Of(l.all()))
		gone()
		if out, err := shimUmount(); err != nil {
			t.Fatalf("the shim's retry once the agent is gone: %v, %s", err, out)
		}
		l.settle(t, true)
		for _, f := range o.set().Of(l.all())[before:] {
			t.Errorf("a finding after the agent went and the retry succeeded: %s", f.Line())
		}
		return
	}
	fs := l.about(r.rootfs, r.rootfs) // each checked against the oracle's answer as it arrived
	l.settle(t, true)
	got := o.set().Of(l.all())
	findingset.Exact(t, got, []findingset.Want{want})
	if len(fs) != 1 || len(got) != 1 {
		for _, f := range l.all() { // what the cell saw instead (MNTLEAK_TEST_RECORD keeps its events)
			t.Logf("a finding of the cell's tracing: %s", f.Line())
		}
		return
	}
	f := got[0]
	t.Log(f.Line())
	for _, w := range []string{"in the rootfs of container app (containerd namespace k8s.io)", "sleep[" + strconv.Itoa(pid) + "]"} {
		if c.hold == mapped || c.hold == root {
			w = strings.Replace(w, "sleep[", "busybox[", 1)
		}
		if !strings.Contains(f.Summary, w) {
			t.Errorf("the summary does not say %q: %s", w, f.Summary)
		}
	}
	if made := strings.Contains(f.Summary, "which containerd-shim["); made == c.predates {
		t.Errorf("the shim's mount named: %v, want %v (traced): %s", made, !c.predates, f.Summary)
	}
	if f.Release != "" {
		t.Errorf("a busy rootfs in the caller's own namespace is not a leak to release: %s", f.Release)
	}
}
