package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

// TestFailureNamesPinsMadeAfterTheList: the daemon's pin search for a
// failure on a copy in holder namespaces reads their members, the pids
// its lineage does not know and the processes a thread of which moved
// since its last process list (correlate/pin_bound.go), not every
// process. Here every pin but the holder's is made after the daemon's
// startup list: a process forked in the holder namespace by a member of
// it (forks are not traced: its pid is unknown) holds the copy by its
// cwd, and a thread of the test process joins the namespace (setns,
// traced; the process stays in the host's) and holds it by its cwd and
// an open file. The failure (umount2 EINVAL in the host of a directory
// that is a mount point in the holder's namespace only, the latency
// bench's failure) names exactly the pins the kernel shows (the oracle).
func TestFailureNamesPinsMadeAfterTheList(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "sh", "nsenter", "umount", "sleep")
	dir := t.TempDir()
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	h := privtest.StartHolder(t, "private", "mount -t tmpfs -o size=1m mntleak-pin-bound "+vol+" && cd "+vol+" && : >f && exec 3<f")
	// A member of the holder namespace (in the startup list) that forks,
	// when told, a process whose cwd is the copy.
	pidFile := filepath.Join(dir, "forked.pid")
	spawner := exec.Command("nsenter", "-t", strconv.Itoa(h.PID), "-m", "sh", "-c",
		"trap '(cd "+vol+" && exec sleep 600) & echo $! >"+pidFile+"' USR1; echo ready; while :; do sleep 0.2 & wait; done")
	privtest.StartReady(t, spawner, 10*time.Second)
	t.Cleanup(func() {
		if b, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(h.PID)+"/cwd", &st); err != nil {
		t.Fatal(err)
	}
	d := privtest.StartDaemon(t, nil, "--state-dir", "")
	// After the daemon's list: the fork, then the thread's setns.
	if err := spawner.Process.Signal(syscall.SIGUSR1); err != nil {
		t.Fatal(err)
	}
	privtest.WaitFor(t, 10*time.Second, "the forked process in the copy", func() bool {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return false
		}
		pid := strings.TrimSpace(string(b))
		comm, _ := os.ReadFile("/proc/" + pid + "/comm")
		cwd, _ := os.Readlink("/proc/" + pid + "/cwd")
		return strings.TrimSpace(string(comm)) == "sleep" && cwd == vol
	})
	tid := privtest.JoinAndHold(t, h.PID, vol, "f")
	if out, err := exec.Command("umount", vol).CombinedOutput(); err == nil {
		t.Fatalf("umount %s in the host succeeded: %s", vol, out)
	}
	isFinding := func(s string) bool {
		return strings.Contains(s, `"finding":"failure"`) && strings.Contains(s, "umount2 "+vol)
	}
	if !d.Logs.Within(15*time.Second, isFinding) {
		d.Stop(t)
		for _, l := range d.Logs.All() {
			t.Log(l)
		}
		t.Fatalf("no failure finding on %s", vol)
	}
	line, _ := d.Logs.Find(isFinding)
	var logged struct{ Detail finding.Finding }
	if err := json.Unmarshal([]byte(line), &logged); err != nil {
		t.Fatal(err)
	}
	got, want := pinsBeside(t, st.Dev, &logged.Detail)
	b, _ := os.ReadFile(pidFile)
	forked := strings.TrimSpace(string(b))
	for _, must := range []string{fmt.Sprintf("%d/%d cwd", os.Getpid(), tid), forked + "/0 cwd"} {
		if !slices.Contains(want, must) {
			t.Fatalf("the oracle finds %v: want %s among them", want, must)
		}
	}
	if !slices.Equal(slices.Compact(got), slices.Compact(want)) {
		t.Errorf("the failure names the pins %v, the kernel's (the oracle's) are %v\n%s", got, want, logged.Detail.Report())
	}
	d.Stop(t)
}
