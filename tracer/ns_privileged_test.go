package tracer_test

import (
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
)

// nsOf parses the inode out of "mnt:[4026532290]".
func nsOf(t *testing.T, link string) uint32 {
	t.Helper()
	s := strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(link), "mnt:["), "]")
	n, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		t.Fatalf("parse namespace link %q: %v", link, err)
	}
	return uint32(n)
}

// TestUnshareEvents: unshare(1) -m reports both namespaces; the new one is what
// the process itself then sees.
func TestUnshareEvents(t *testing.T) {
	privtest.RequireCommands(t, "unshare", "readlink")
	c := startTracer(t)
	hostNS := privtest.MountNS(t, "self")
	cmd := exec.Command("unshare", "-m", "readlink", "/proc/self/ns/mnt")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("unshare -m: %v", err)
	}
	newNS := nsOf(t, string(out))
	ev := c.waitFor(t, "unshare", func(e *event.Event) bool {
		return e.Kind == event.KindUnshare && e.PID == uint32(cmd.Process.Pid)
	})
	if ev.MntNSBefore != hostNS || ev.MntNSAfter != newNS || ev.MntNS != newNS {
		t.Errorf("before=%d after=%d header=%d, want %d -> %d", ev.MntNSBefore, ev.MntNSAfter, ev.MntNS, hostNS, newNS)
	}
	if ev.Flags&unix.CLONE_NEWNS == 0 || !strings.Contains(ev.FlagNames, "CLONE_NEWNS") || ev.Ret != 0 || ev.Syscall != "unshare" {
		t.Errorf("flags=%#x (%s) ret=%d syscall=%s", ev.Flags, ev.FlagNames, ev.Ret, ev.Syscall)
	}
}

// TestUnshareMntnsBefore: with no entry state, mntns_before comes from
// what the programs recorded of the thread. A process forked after tracing
// started is known from its fork: its namespace (TestUnshareEvents checks that
// path with unshare(1)). One that predates tracing is unknown: a successful
// unshare reports mntns_before 0, for userspace to fill in, while a failed
// one changed nothing and reports the namespace it is in.
func TestUnshareMntnsBefore(t *testing.T) {
	privtest.RequireCommands(t, "sh", "unshare", "readlink")
	hostNS := privtest.MountNS(t, "self")
	// Started before the tracer; exec keeps its pid, so the unshare comes
	// from a task forked before tracing.
	old := exec.Command("sh", "-c", "read go && exec unshare -m readlink /proc/self/ns/mnt")
	stdin, err := old.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out strings.Builder
	old.Stdout = &out
	if err := old.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = old.Process.Kill(); _ = old.Wait() })
	c := startTracer(t)

	if _, err := stdin.Write([]byte("go\n")); err != nil {
		t.Fatal(err)
	}
	if err := old.Wait(); err != nil {
		t.Fatalf("unshare -m: %v", err)
	}
	ev := c.waitFor(t, "unshare by a process predating tracing", func(e *event.Event) bool {
		return e.Kind == event.KindUnshare && e.PID == uint32(old.Process.Pid)
	})
	if newNS := nsOf(t, out.String()); ev.MntNSBefore != 0 || ev.MntNSAfter != newNS || ev.Ret != 0 {
		t.Errorf("predating: before=%d after=%d ret=%d, want 0 (unknown) -> %d", ev.MntNSBefore, ev.MntNSAfter, ev.Ret, newNS)
	}

	// Forked under tracing: known from the fork.
	young := exec.Command("unshare", "-m", "true")
	if err := young.Run(); err != nil {
		t.Fatalf("unshare -m: %v", err)
	}
	ev = c.waitFor(t, "unshare by a process forked under tracing", func(e *event.Event) bool {
		return e.Kind == event.KindUnshare && e.PID == uint32(young.Process.Pid)
	})
	if ev.MntNSBefore != hostNS || ev.MntNSAfter == hostNS || ev.Ret != 0 {
		t.Errorf("forked under tracing: before=%d after=%d ret=%d, want %d -> another", ev.MntNSBefore, ev.MntNSAfter, ev.Ret, hostNS)
	}

	// A failed unshare (CLONE_VFORK is not a flag unshare takes): known
	// or not, the thread is where it was.
	tid := onThread(func() {
		if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_VFORK); err != unix.EINVAL {
			t.Errorf("unshare(CLONE_NEWNS|CLONE_VFORK): %v, want EINVAL", err)
		}
	})
	ev = c.waitFor(t, "failed unshare", func(e *event.Event) bool {
		return e.Kind == event.KindUnshare && e.TID == uint32(tid)
	})
	if ev.MntNSBefore != hostNS || ev.MntNSAfter != hostNS || ev.Ret != -int64(unix.EINVAL) {
		t.Errorf("failed: before=%d after=%d ret=%d, want %d -> %d -EINVAL", ev.MntNSBefore, ev.MntNSAfter, ev.Ret, hostNS, hostNS)
	}
}

// TestSetns: nsenter(1) joins another process's mount namespace.
func TestSetns(t *testing.T) {
	privtest.RequireCommands(t, "nsenter", "readlink")
	c := startTracer(t)
	hostNS := privtest.MountNS(t, "self")
	holder := privtest.StartHolder(t, "private", "true")
	cmd := exec.Command("nsenter", "--mount=/proc/"+strconv.Itoa(holder.PID)+"/ns/mnt", "readlink", "/proc/self/ns/mnt")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("nsenter: %v", err)
	}
	if got := nsOf(t, string(out)); got != holder.MntNS {
		t.Fatalf("nsenter landed in %d, holder is in %d", got, holder.MntNS)
	}
	ev := c.waitFor(t, "setns", func(e *event.Event) bool {
		return e.Kind == event.KindSetns && e.PID == uint32(cmd.Process.Pid)
	})
	if ev.MntNSBefore != hostNS || ev.MntNSAfter != holder.MntNS || ev.TargetIno != holder.MntNS {
		t.Errorf("before=%d after=%d target=%d, want %d -> %d (target %d)", ev.MntNSBefore, ev.MntNSAfter, ev.TargetIno, hostNS, holder.MntNS, holder.MntNS)
	}
	if ev.FD < 0 || ev.FlagNames != "CLONE_NEWNS" || ev.Ret != 0 {
		t.Errorf("fd=%d nstype=%q ret=%d, want an fd, CLONE_NEWNS, 0", ev.FD, ev.FlagNames, ev.Ret)
	}
}

// TestNewNamespaceFork: a child started with CLONE_NEWNS is reported by the
// fork tracepoint with both namespaces.
func TestNewNamespaceFork(t *testing.T) {
	privtest.RequireCommands(t, "sleep")
	c := startTracer(t)
	hostNS := privtest.MountNS(t, "self")
	cmd := exec.Command("sleep", "600")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: unix.CLONE_NEWNS}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	childNS := privtest.MountNS(t, strconv.Itoa(cmd.Process.Pid))
	ev := c.waitFor(t, "newns fork", func(e *event.Event) bool {
		return e.Kind == event.KindNewNSFork && e.ChildPID == uint32(cmd.Process.Pid)
	})
	if ev.PID != ownPID() || ev.ParentMntNS != hostNS || ev.ChildMntNS != childNS || ev.ChildTID != ev.ChildPID {
		t.Errorf("pid=%d parent_ns=%d child_ns=%d child_tid=%d, want %d %d %d %d", ev.PID, ev.ParentMntNS, ev.ChildMntNS, ev.ChildTID, ownPID(), hostNS, childNS, ev.ChildPID)
	}
	if ev.SyscallNr != -1 || ev.Syscall != "" || ev.Failed() {
		t.Errorf("a fork event has syscall %d %q", ev.SyscallNr, ev.Syscall)
	}
	// A plain fork stays in the parent's namespace and costs no event.
	plain := exec.Command("true")
	if err := plain.Run(); err != nil {
		t.Fatal(err)
	}
	c.waitFor(t, "exit of the plain child", func(e *event.Event) bool {
		return e.Kind == event.KindExit && e.PID == uint32(plain.Process.Pid)
	})
	if evs := c.matching(func(e *event.Event) bool {
		return e.Kind == event.KindNewNSFork && e.ChildPID == uint32(plain.Process.Pid)
	}); len(evs) != 0 {
		t.Errorf("plain fork reported as a new-namespace fork: %+v", evs)
	}
}

// TestExitLeadersOnly: a process exit is reported with its status; a thread
// that exits while its process lives on is not.
func TestExitLeadersOnly(t *testing.T) {
	c := startTracer(t)
	cmd := exec.Command("sh", "-c", "exit 3")
	_ = cmd.Run()
	ev := c.waitFor(t, "exit", func(e *event.Event) bool {
		return e.Kind == event.KindExit && e.PID == uint32(cmd.Process.Pid)
	})
	if ev.ExitCode != 3<<8 || ev.TID != ev.PID {
		t.Errorf("exit_code=%d tid=%d, want %d from the leader %d", ev.ExitCode, ev.TID, 3<<8, ev.PID)
	}

	// A goroutine that exits while locked to its thread makes the Go
	// runtime terminate that thread - unless it is the main thread, which
	// the runtime never ends; then try again on another.
	tid := 0
	for tid == 0 {
		tidc := make(chan int)
		go func() {
			runtimeLockForever()
			if unix.Gettid() == unix.Getpid() {
				runtimeUnlock()
				tidc <- 0
				return
			}
			tidc <- unix.Gettid()
		}()
		tid = <-tidc
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if err := unix.Stat("/proc/self/task/"+strconv.Itoa(tid), new(unix.Stat_t)); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("thread %d did not exit", tid)
		}
		time.Sleep(10 * time.Millisecond)
	}
	// A later leader exit proves the thread's exit was already read.
	marker := exec.Command("true")
	_ = marker.Run()
	c.waitFor(t, "marker exit", func(e *event.Event) bool { return e.Kind == event.KindExit && e.PID == uint32(marker.Process.Pid) })
	if evs := c.matching(func(e *event.Event) bool { return e.Kind == event.KindExit && e.TID == uint32(tid) }); len(evs) != 0 {
		t.Errorf("a non-leader thread exit was reported: %+v", evs)
	}
}
