package tracer_test

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/tracer"
)

// TestTasksBornUnderTracing: the tasks the programs keep are read back,
// each with its process and its namespace now, checked against /proc: a
// process born under tracing in this namespace, and its child that
// unshared a namespace of its own (the namespace it is in now, not the one
// it was born in); threads of this process born under tracing, with this
// process as theirs (and every listed thread's process is the thread
// group /proc gives it); a process started before tracing and that never
// moved is not among them; an exited one is gone.
func TestTasksBornUnderTracing(t *testing.T) {
	privtest.RequireCommands(t, "sh", "unshare", "sleep")
	before := exec.Command("sleep", "60")
	if err := before.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = before.Process.Kill(); _ = before.Wait() })
	c := startTracer(t)
	self := privtest.MountNS(t, "self")
	// sh forks unshare, which unshares and execs sleep: sh's child.
	born := exec.Command("sh", "-c", "unshare -m sleep 60 & echo $!; wait")
	out, err := born.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := born.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = born.Process.Kill(); _ = born.Wait() })
	var line [32]byte
	n, _ := out.Read(line[:])
	child, err := strconv.Atoi(strings.TrimSpace(string(line[:n])))
	if err != nil {
		t.Fatalf("the unshared child's pid: %q: %v", line[:n], err)
	}
	owned := privtest.Own(t, child)
	var childNS uint32
	privtest.WaitFor(t, 5*time.Second, "the child in a namespace of its own", func() bool {
		childNS = privtest.MountNS(t, strconv.Itoa(child))
		return childNS != self
	})

	// Threads of this process born under tracing: goroutines locked to
	// OS threads of their own, more than the runtime keeps idle.
	tids, release := lockedThreads(t, 16)
	defer release()

	tasks, complete, err := c.tr.Tasks()
	if err != nil || !complete {
		t.Fatalf("Tasks: complete %v, %v", complete, err)
	}
	byTID := map[int]event.Task{}
	for _, tk := range tasks {
		byTID[tk.TID] = tk
		// Every listed thread's process is the one /proc says (Tgid).
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(tk.TID) + "/status"); err == nil {
			if want := "\nTgid:\t" + strconv.Itoa(tk.PID) + "\n"; !strings.Contains(string(b), want) {
				t.Errorf("task %+v: /proc says another thread group (want %q)", tk, strings.TrimSpace(want))
			}
		}
	}
	listed := 0
	for _, tid := range tids {
		if tk, ok := byTID[tid]; ok {
			listed++
			if tk.PID != os.Getpid() {
				t.Errorf("thread %d of this process listed as of process %d, want %d", tid, tk.PID, os.Getpid())
			}
		}
	}
	if listed == 0 {
		t.Errorf("none of this process's %d threads born under tracing is listed", len(tids))
	}
	for _, want := range []event.Task{{TID: born.Process.Pid, PID: born.Process.Pid, MntNS: self}, {TID: child, PID: child, MntNS: childNS}} {
		if got := byTID[want.TID]; got != want {
			t.Errorf("task %d: %+v, want %+v", want.TID, got, want)
		}
	}
	if tk, ok := byTID[before.Process.Pid]; ok {
		t.Errorf("a process started before tracing, that never moved, is listed: %+v", tk)
	}
	if err := owned.Kill(); err != nil {
		t.Fatal(err)
	}
	privtest.WaitFor(t, 5*time.Second, "the killed task gone from the list", func() bool {
		tasks, _, err := c.tr.Tasks()
		if err != nil {
			t.Fatal(err)
		}
		return !slices.ContainsFunc(tasks, func(tk event.Task) bool { return tk.TID == child })
	})
}

// lockedThreads starts n goroutines each locked to its OS thread and
// returns their thread ids; release ends them, and their threads with them
// (a goroutine that returns locked takes its thread along).
func lockedThreads(t *testing.T, n int) ([]int, func()) {
	t.Helper()
	stop := make(chan struct{})
	got := make(chan int, n)
	for range n {
		go func() {
			runtime.LockOSThread()
			got <- unix.Gettid()
			<-stop
		}()
	}
	var tids []int
	for range n {
		tids = append(tids, <-got)
	}
	return tids, func() { close(stop) }
}

// TestTasksNeverCompleteOnceNearlyFull: with the task map bounded at 64
// entries, 100 processes of the test's own alive at once bring the
// programs' count of its entries to its bound's share that Tasks trusts:
// the list is not complete then, and stays so once they have exited and
// the map holds few again (it may have evicted a task meanwhile, one
// that lives on).
func TestTasksNeverCompleteOnceNearlyFull(t *testing.T) {
	privtest.RequireCommands(t, "sleep")
	buf, hooks := tracer.BufferAuto, tracer.HooksAuto
	c := startTracerWith(t, tracer.WithTaskMapEntries(tracer.Config{Buffer: buf, Hooks: hooks}, 64), zaptest.NewLogger(t))
	var kids []*exec.Cmd
	for range 100 {
		k := exec.Command("sleep", "60")
		if err := k.Start(); err != nil {
			t.Fatal(err)
		}
		kids = append(kids, k)
	}
	_, complete, err := c.tr.Tasks()
	if err != nil || complete {
		t.Errorf("with 100 processes born under tracing in a map of 64: complete=%v, err %v; want incomplete", complete, err)
	}
	for _, k := range kids {
		_ = k.Process.Kill()
		_ = k.Wait()
	}
	tasks, complete, err := c.tr.Tasks()
	if err != nil || complete {
		t.Errorf("after they exited (%d tasks in the map): complete=%v, err %v; want incomplete for good", len(tasks), complete, err)
	}
}
