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

// TestThreadUnshareKeepsItsProcess: a private namespace on the node has two
// processes, its creator and a Go program; the node unmounts a volume the
// namespace copied; while the teardown settles, one locked OS thread of
// the Go program unshares a mount namespace of its own and ends (as a Go
// program mounting in a namespace of its own from a thread does). The
// process stays in the holder namespace, as the kernel says
// (/proc/PID/ns/mnt): the one leak finding names the namespace's creator
// and the Go program among its processes, never the thread's namespace,
// that went with the thread.
func TestThreadUnshareKeepsItsProcess(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "mkfs.ext4", "losetup", "sh", "sleep")
	dir := t.TempDir()
	dev := privtest.LoopDevice(t, 8)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	node := privtest.StartNode(t)
	node.Run(t, "mount", dev, vol)
	l := startTracing(t)
	h := node.StartHolder(t, "private", "true")
	files := privtest.Mkdir(t, filepath.Join(dir, "thread"))
	prog := exec.Command("nsenter", "-t", strconv.Itoa(h.PID), "-m", "--", os.Args[0])
	prog.Env = append(os.Environ(), threadEnv+"="+files)
	run(t, prog)
	if ns := privtest.MountNS(t, strconv.Itoa(prog.Process.Pid)); ns != h.MntNS {
		t.Fatalf("the Go program is in mnt:[%d], want the holder's mnt:[%d]", ns, h.MntNS)
	}
	l.holderSeen(t)
	node.Run(t, "umount", vol)
	if err := os.WriteFile(filepath.Join(files, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	privtest.WaitFor(t, 5*time.Second, "the thread's unshare", func() bool {
		_, err := os.Stat(filepath.Join(files, "tid"))
		return err == nil
	})
	privtest.AfterLeakSettle(t)
	l.settle(t, false)
	objs := objects{paths: []string{dev, vol}}.withHolder(t, h)
	exactFindings(t, l.all(), objs, []expected{{kind: finding.KindLeak, syscall: "umount2", cause: finding.CauseUnshare,
		holder: holder{pid: h.PID, ns: h.MntNS, id: objs.ids[0]}, role: finding.RoleMember, fix: h.PID}})
	for _, f := range l.about(dev, vol) {
		if !namesProcess(f, h.MntNS, prog.Process.Pid) {
			t.Errorf("does not name the Go program [%d] among the processes of mnt:[%d], where its main thread is:\n%s",
				prog.Process.Pid, h.MntNS, f.Line())
		}
	}
}

// namesProcess reports whether f names pid among the processes of its
// holder namespace ns.
func namesProcess(f *finding.Finding, ns uint32, pid int) bool {
	for _, h := range f.Holders {
		if h.MntNS != ns {
			continue
		}
		for _, p := range h.Processes {
			if p.PID == pid {
				return true
			}
		}
	}
	return false
}

// TestNamespaceKeptByAThread: a Go program on the node has one locked OS
// thread (not its main one) unshare a mount namespace, make its root
// private and stay; /proc/PID/ns/mnt is the main thread's (the node's),
// /proc/PID/task/TID/ns/mnt the thread's. The node unmounts a volume the
// thread's namespace copied: that namespace, kept by the thread alone,
// holds the volume. The one leak finding names that namespace, the
// process and the thread (by its tid), and a fix that enters the
// namespace through the thread (nsenter -t TID -m: /proc/PID/ns/mnt would
// enter the node's); the oracle, which reads every thread's namespace,
// agrees.
func TestNamespaceKeptByAThread(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "losetup", "sh", "sleep")
	dir := t.TempDir()
	dev := privtest.LoopDevice(t, 8)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	node := privtest.StartNode(t)
	node.Run(t, "mount", dev, vol)
	l := startTracing(t)
	pid, tid, threadNS := startStayingThread(t, node, filepath.Join(dir, "thread"))
	l.holderSeen(t)
	node.Run(t, "umount", vol)
	privtest.AfterLeakSettle(t)
	l.settle(t, false)
	objs := objects{paths: []string{dev, vol}, ns: []uint32{threadNS}, ids: []uint64{findingset.BirthID(t, tid)}}
	exactFindings(t, l.all(), objs, []expected{{kind: finding.KindLeak, syscall: "umount2", cause: finding.CauseUnshare,
		holder: holder{pid: pid, ns: threadNS, id: objs.ids[0]}, role: finding.RoleMember, fix: pid}})
	for _, f := range l.about(dev, vol) {
		line := f.Line()
		if _, a := f.Actor(); a == nil || a.TID != tid {
			t.Errorf("actor %+v, want the thread %d of [%d]:\n%s", a, tid, pid, line)
		}
		if want := "thread " + strconv.Itoa(tid); !strings.Contains(line, want) {
			t.Errorf("line lacks %q:\n%s", want, line)
		}
		if want := "nsenter -t " + strconv.Itoa(tid) + " -m"; !strings.Contains(f.Fix, want) {
			t.Errorf("fix lacks %q: %s", want, f.Fix)
		}
	}
}

// startStayingThread starts, in the node's namespace, the thread helper
// whose thread stays in a namespace of its own (threadStaysEnv; env adds
// threadCwdEnv, threadSlaveEnv), its files under files, and returns the
// Go program's pid, the thread's tid and the thread's namespace, having
// checked that the program's main thread is still in the node's.
func startStayingThread(t *testing.T, node privtest.Node, files string, env ...string) (pid, tid int, threadNS uint32) {
	t.Helper()
	privtest.Mkdir(t, files)
	prog := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", os.Args[0])
	prog.Env = append(append(os.Environ(), threadEnv+"="+files, threadStaysEnv+"=1"), env...)
	run(t, prog)
	if err := os.WriteFile(filepath.Join(files, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	privtest.WaitFor(t, 5*time.Second, "the thread's unshare", func() bool {
		b, err := os.ReadFile(filepath.Join(files, "tid"))
		if err != nil {
			return false
		}
		tid, err = strconv.Atoi(string(b))
		return err == nil
	})
	pid = prog.Process.Pid
	if ns := privtest.MountNS(t, strconv.Itoa(pid)); ns != node.MntNS {
		t.Fatalf("the Go program is in mnt:[%d], want the node's mnt:[%d]", ns, node.MntNS)
	}
	threadNS = privtest.MountNS(t, strconv.Itoa(pid)+"/task/"+strconv.Itoa(tid))
	if threadNS == node.MntNS {
		t.Fatalf("the thread %d is in the node's mnt:[%d], want a namespace of its own", tid, threadNS)
	}
	return pid, tid, threadNS
}

// TestThreadCwdPinsItsCopy (issue 25): a Go program on the node has one
// locked OS thread (not its main one) unshare a mount namespace, make
// its root private and change into its copy of a volume the node
// mounted; the main thread's cwd stays elsewhere (/proc/PID/cwd is not
// the volume). The node unmounts the volume: the thread's copy stays,
// busy by the thread's own cwd. The one leak finding names the thread's
// namespace and, as what holds the copy, the process by that thread's
// cwd (prog[PID] thread TID cwd VOL, role pinner), and a fix for that
// process; the oracle, which reads every thread's cwd, agrees.
//
// The control: the same thread with its namespace a slave of the node's
// and its cwd outside the volume; the node's unmount reaches its copy and
// nothing holds the volume. After the leak settle window (the correlator
// flushed), no finding is about it.
func TestThreadCwdPinsItsCopy(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "nsenter", "mount", "umount", "losetup")
	for _, control := range []bool{false, true} {
		t.Run(map[bool]string{false: "cell", true: "control"}[control], func(t *testing.T) {
			dir := t.TempDir()
			dev := privtest.LoopDevice(t, 8)
			vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
			node := privtest.StartNode(t)
			node.Run(t, "mount", dev, vol)
			l := startTracing(t)
			env := []string{threadCwdEnv + "=" + vol}
			if control {
				env = []string{threadCwdEnv + "=" + dir, threadSlaveEnv + "=1"}
			}
			pid, tid, threadNS := startStayingThread(t, node, filepath.Join(dir, "thread"), env...)
			cwd := func(of string) string {
				p, err := os.Readlink("/proc/" + of + "/cwd")
				if err != nil {
					t.Fatal(err)
				}
				return p
			}
			if got := cwd(strconv.Itoa(pid)); got == vol {
				t.Fatalf("the main thread's cwd is %s, want elsewhere", got)
			}
			if got, want := cwd(strconv.Itoa(pid)+"/task/"+strconv.Itoa(tid)), map[bool]string{false: vol, true: dir}[control]; got != want {
				t.Fatalf("the thread's cwd is %s, want %s", got, want)
			}
			l.holderSeen(t)
			node.Run(t, "umount", vol)
			privtest.AfterLeakSettle(t)
			l.settle(t, control)
			objs := objects{paths: []string{dev, vol}, ns: []uint32{threadNS}, ids: []uint64{findingset.BirthID(t, tid)}}
			if control {
				noFinding(t, l.all(), objs)
				l.controlDevices(t, objs)
				return
			}
			exactFindings(t, l.all(), objs, []expected{{kind: finding.KindLeak, syscall: "umount2", cause: finding.CauseUnshare,
				holder: holder{pid: pid, ns: threadNS, id: objs.ids[0]}, role: finding.RolePinner, fix: pid}})
			for _, f := range l.about(dev, vol) {
				line := f.Line()
				t.Log(line)
				if _, a := f.Actor(); a == nil || a.PID != pid || a.TID != tid || a.Pin != "cwd" || a.Path != vol {
					t.Errorf("actor %+v, want [%d] thread %d by its cwd %s:\n%s", a, pid, tid, vol, line)
				}
				if want := "thread " + strconv.Itoa(tid) + " cwd " + vol; !strings.Contains(line, want) {
					t.Errorf("line lacks %q:\n%s", want, line)
				}
			}
		})
	}
}

// TestHolderMovedAfterTheUnmount: a holder in a private namespace copied
// the node's volume; the node unmounts it; while the teardown settles the
// holder's main thread unshares again (exec unshare: the same pid moves
// to a new namespace, a copy of the one it left, volume included) and its
// first namespace, with no process left, goes. The one leak finding names
// the namespace that holds the copy now, the new one, with the holder and
// the unshare that made it; the oracle agrees.
func TestHolderMovedAfterTheUnmount(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "losetup", "sh", "sleep")
	dir := t.TempDir()
	dev := privtest.LoopDevice(t, 8)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	move := filepath.Join(dir, "move")
	node := privtest.StartNode(t)
	node.Run(t, "mount", dev, vol)
	l := startTracing(t)
	// The script says ready itself, then waits; StartHolder's own
	// "echo ready && exec sleep" after it is never reached.
	h := node.StartHolder(t, "private", "echo ready; while [ ! -e "+move+" ]; do sleep 0.05; done; exec unshare -m --propagation private sleep 600")
	first := h.MntNS
	l.holderSeen(t)
	node.Run(t, "umount", vol)
	time.Sleep(300 * time.Millisecond)
	if err := os.WriteFile(move, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var now uint32
	privtest.WaitFor(t, 5*time.Second, "the holder's unshare", func() bool {
		now = privtest.MountNS(t, strconv.Itoa(h.PID))
		return now != first
	})
	privtest.AfterLeakSettle(t)
	l.settle(t, false)
	// By the paths and the namespace it holds now: the private holder
	// dropped the test node's Kubernetes mounts in its first namespace
	// (privtest), whose leaks are not this test's.
	objs := objects{paths: []string{dev, vol}, ns: []uint32{now}, ids: []uint64{findingset.BirthID(t, h.PID)}}
	exactFindings(t, l.all(), objs, []expected{{kind: finding.KindLeak, syscall: "umount2", cause: finding.CauseUnshare,
		holder: holder{pid: h.PID, ns: now, id: objs.ids[0]}, role: finding.RoleMember, fix: h.PID}})
	l.about(dev, vol)
}
