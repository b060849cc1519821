package procfs

import (
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestOneThread: a sleep (one thread) is told to have one by its task
// directory's link count; this test process (the Go runtime runs several
// threads) is not, nor is a process that does not exist: both are read
// thread by thread.
func TestOneThread(t *testing.T) {
	cmd := exec.Command("sleep", "30")
	if err := cmd.Start(); err != nil {
		t.Skipf("no sleep: %v", err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	dir := "/proc/" + strconv.Itoa(cmd.Process.Pid)
	deadline := time.Now().Add(5 * time.Second)
	for { // until the child has exec'd sleep
		b, _ := os.ReadFile(dir + "/comm")
		if strings.TrimSpace(string(b)) == "sleep" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never ran sleep", dir)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if !oneThread(dir) {
		t.Errorf("oneThread(%s) = false for a sleep", dir)
	}
	if oneThread("/proc/self") {
		t.Error("oneThread(/proc/self) = true for a Go test process")
	}
	if oneThread("/proc/no-such-process") {
		t.Error("oneThread of a missing process = true, want false (read its threads)")
	}
}
