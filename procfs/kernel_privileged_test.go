package procfs

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestKernelThreadsListedApart: the process list tells the kernel's
// threads apart from the processes, each with its namespace. The oracle is
// the kernel's own list of kthreadd's children (/proc/2/task/2/children),
// read before the list: each of them still alive after it was alive
// during it, and is a kernel thread, not a process, unless it has an
// executable; kthreadd itself is a kernel thread, this test's process is
// a process.
func TestKernelThreadsListedApart(t *testing.T) {
	privtest.Require(t)
	b, err := os.ReadFile("/proc/2/task/2/children")
	if err != nil {
		t.Skipf("kthreadd's children cannot be read (CONFIG_PROC_CHILDREN): %v", err)
	}
	l, err := Host{}.ProcessList()
	if err != nil {
		t.Fatal(err)
	}
	procs, kernel := l.Procs, l.Kernel
	isKernel, isProc := map[int]bool{}, map[int]bool{}
	for _, p := range kernel {
		if p.MntNS == 0 {
			t.Errorf("kernel thread %s[%d] without its mount namespace", p.Comm, p.PID)
		}
		isKernel[p.PID] = true
	}
	for _, p := range procs {
		isProc[p.PID] = true
	}
	checked := 0
	for _, f := range append(strings.Fields(string(b)), "2") {
		pid, _ := strconv.Atoi(f)
		if _, err := os.Stat("/proc/" + f + "/stat"); err != nil {
			continue // exited since
		}
		// A kernel thread has no memory of its own, so no executable: a
		// child with one is a helper the kernel started (modprobe, a core
		// dump's pipe) that exec'd, a process.
		_, exeErr := os.Readlink("/proc/" + f + "/exe")
		if want := exeErr != nil; isKernel[pid] != want || isProc[pid] == want {
			t.Errorf("kthreadd's child %d: a kernel thread %v, a process %v; want a kernel thread %v (its exe: %v)", pid, isKernel[pid], isProc[pid], want, exeErr)
		}
		checked++
	}
	if !isProc[os.Getpid()] || checked < 2 {
		t.Errorf("this process listed %v; %d of kthreadd and its children checked, want more", isProc[os.Getpid()], checked)
	}
	t.Logf("%d processes, %d kernel threads; %d of kthreadd and its children checked", len(procs), len(kernel), checked)
}
