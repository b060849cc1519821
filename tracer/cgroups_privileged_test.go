package tracer_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestCgroupChangesCounted: a process moved into another cgroup, moved
// back, and a cgroup renamed each add to the count the programs keep
// (what /proc/PID/cgroup says changed), read from the program's memory.
func TestCgroupChangesCounted(t *testing.T) {
	privtest.RequireCommands(t, "sleep")
	c := startTracer(t)
	dir := privtest.Cgroup(t)
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	count := func(what string) uint64 {
		t.Helper()
		n, ok := c.tr.CgroupChanges()
		if !ok {
			t.Fatalf("%s: the count of cgroup changes cannot be read", what)
		}
		return n
	}
	before := count("before")
	privtest.MoveToCgroup(t, dir, sleeper.Process.Pid)
	moved := count("after a move")
	if moved <= before {
		t.Errorf("count %d after a process moved into %s, %d before: want more", moved, dir, before)
	}
	renamed := dir + "-renamed"
	if err := os.Rename(dir, renamed); err != nil {
		t.Fatalf("rename cgroup %s: %v", dir, err)
	}
	after := count("after a rename")
	if err := os.Rename(renamed, dir); err != nil {
		t.Fatalf("rename cgroup %s back: %v", renamed, err)
	}
	if after <= moved {
		t.Errorf("count %d after cgroup %s was renamed %s, %d before: want more", after, filepath.Base(dir), filepath.Base(renamed), moved)
	}
}
