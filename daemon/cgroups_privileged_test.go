package daemon

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
	"github.com/mntleak/mntleak/tracer"
)

// TestCgroupKeptUntilTheProcessMoves: with the tracer's count of cgroup
// changes, the cgroup the daemon names for a process is the one
// /proc/PID/cgroup says, before and after the process is moved into
// another cgroup (the count moves, the path is read again).
func TestCgroupKeptUntilTheProcessMoves(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "sleep")
	tr, err := tracer.New(tracer.Config{Sink: func(*event.Event) {}}, zap.NewNop())
	if err != nil {
		t.Fatalf("tracer.New: %v", err)
	}
	t.Cleanup(func() { tr.Close() })
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sleeper.Process.Kill(); _ = sleeper.Wait() })
	pid := sleeper.Process.Pid
	var host procfs.Host
	src := Sources{Log: zap.NewNop(), cgroups: newCgroupCache(tr.CgroupChanges, host.Cgroup)}
	check := func(when string) string {
		t.Helper()
		got, _, err := src.Cgroup(pid)
		want, _, err2 := host.Cgroup(pid)
		if err != nil || err2 != nil || got != want {
			t.Fatalf("%s: cgroup %q (%v), /proc says %q (%v)", when, got, err, want, err2)
		}
		return got
	}
	before := check("before the move")
	check("asked again")
	dir := privtest.Cgroup(t)
	privtest.MoveToCgroup(t, dir, pid)
	after := check("after the move")
	if after == before || !strings.HasSuffix(after, "/"+filepath.Base(dir)) {
		t.Errorf("cgroup after the move into %s: %q (before %q)", dir, after, before)
	}
}
