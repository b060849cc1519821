package procfs

import (
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestMountinfoOfAReusedPid: a pid listed in one namespace whose process
// exits and whose pid the next process takes, in another namespace, is
// read as the new process's table, labelled with the new namespace (the
// callers compare it with the namespace they listed). CI met this when a
// pid_max of 32768 wrapped under the other packages' tests.
func TestMountinfoOfAReusedPid(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "sh", "sleep")
	h := Host{}
	hostNS := privtest.MountNS(t, "self")
	// The setup needs the kernel to hand the freed pid to the new process;
	// another package's fork may take it first: then the setup (never the
	// check) is made again, at most 20 times.
	for try := 1; try <= 20; try++ {
		old := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c", "echo ready; exec sleep 600")
		pid := start(t, old)
		listed := listedAs(t, h, pid)
		if listed.MntNS == hostNS {
			t.Fatalf("pid %d listed in this namespace, mnt:[%d]", pid, hostNS)
		}
		_ = old.Process.Signal(syscall.SIGKILL)
		_, _ = old.Process.Wait()
		time.Sleep(20 * time.Millisecond) // start times count 10 ms ticks
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(pid-1)), 0); err != nil {
			t.Fatalf("ns_last_pid: %v", err)
		}
		if next := start(t, exec.Command("sh", "-c", "echo ready; exec sleep 600")); next != pid {
			t.Logf("try %d: pid %d went to another process (got %d); setting up again", try, pid, next)
			continue
		}
		ns, mounts, err := h.Mountinfo(pid)
		if err != nil || ns != hostNS || len(mounts) == 0 {
			t.Fatalf("Mountinfo(%d) after reuse = mnt:[%d], %d mounts, %v; want mnt:[%d] (listed mnt:[%d])", pid, ns, len(mounts), err, hostNS, listed.MntNS)
		}
		if now := listedAs(t, h, pid); now.StartTime == listed.StartTime {
			t.Errorf("pid %d's start time %d unchanged by its reuse", pid, now.StartTime)
		}
		return
	}
	t.Fatal("20 tries: the freed pid never went to the next process")
}

// listedAs is pid's entry in the process list.
func listedAs(t *testing.T, h Host, pid int) Process {
	t.Helper()
	procs, err := h.Processes()
	if err != nil && partial(err) != nil {
		t.Fatal(err)
	}
	for _, p := range procs {
		if p.PID == pid {
			return p
		}
	}
	t.Fatalf("pid %d not listed", pid)
	return Process{}
}
