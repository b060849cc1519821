package qemu

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestLabHooks boots each x86 kernel of the lab (labKernels) with
// guest/hooks.sh instead of the scenarios: the start-up of `mntleak trace`
// on each hook path (docs/hooks.md), and tracer's TestHooksSameEvents,
// which runs both paths at once on the same calls and compares every
// event field for field; it must pass where the kernel has BPF
// trampolines and skip where it has none. make lab runs it (LAB_HOOKS=both):
// the trampoline path's start under TCG is too slow for make test.
func TestLabHooks(t *testing.T) {
	if os.Getenv("LAB_HOOKS") != "both" {
		t.Skip("make lab's (LAB_HOOKS=both): the trampoline path's start under TCG takes minutes")
	}
	privtest.Require(t)
	privtest.RequireCommands(t, "bash", "mkfs.ext4", "debugfs")
	dir := t.TempDir()
	mntleak, tracerTest := filepath.Join(dir, "mntleak"), filepath.Join(dir, "tracer.test")
	for _, args := range [][]string{{"build", "-o", mntleak, "./cmd/mntleak"}, {"test", "-c", "-o", tracerTest, "./tracer"}} {
		build := exec.Command("go", args...)
		build.Dir = "../.."
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("static go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	}
	for _, k := range labKernels(t) {
		t.Run(k.name, func(t *testing.T) {
			results := filepath.Join(resultsDir, "hooks-"+k.name)
			if err := os.RemoveAll(results); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			run := exec.Command("bash", "lab.sh", "exec", "guest/hooks.sh", results, mntleak, tracerTest)
			run.Env = append(os.Environ(), "LAB_KERNEL="+k.name)
			if out, err := run.CombinedOutput(); err != nil {
				runLog, _ := os.ReadFile(filepath.Join(results, "out", "run.log"))
				t.Fatalf("lab.sh exec: %v\n%s\nthe guest's run.log tail:\n%s", err, out, tail(string(runLog), 40))
			}
			checkHooksRun(t, filepath.Join(results, "out"), time.Since(start))
		})
	}
}

// checkHooksRun checks guest/hooks.sh's results in out: both paths
// started on a kernel with trampolines (the tracepoint's alone on one
// without), and TestHooksSameEvents passed (or skipped there).
func checkHooksRun(t *testing.T, out string, wall time.Duration) {
	t.Helper()
	version := read(t, out, "version.txt")
	auto := autoHooks(t, version)
	startup := read(t, out, "startup.txt")
	test := read(t, out, "hooks-test.txt")
	t.Logf("guest run in %s; kernel %s; hooks: %s\nstart-up to tracing:\n%s\n%s",
		wall.Round(time.Second), read(t, out, "kernel"), auto, startup, tail(test, 30))
	if !strings.Contains(startup, "mntleak tracepoint ") || strings.Contains(startup, "mntleak tracepoint failed") {
		t.Errorf("the tracepoint path did not start:\n%s", startup)
	}
	trampolineStarted := strings.Contains(startup, "mntleak trampoline ") && !strings.Contains(startup, "mntleak trampoline failed")
	if rc := read(t, out, "hooks-test.rc"); rc != "0" {
		t.Errorf("TestHooksSameEvents exited %s", rc)
	}
	switch auto {
	case "trampoline":
		if !trampolineStarted {
			t.Errorf("auto takes the trampolines, but the forced trampoline path did not start:\n%s", startup)
		}
		if !strings.Contains(test, "--- PASS: TestHooksSameEvents") {
			t.Errorf("TestHooksSameEvents did not pass on a kernel with trampolines")
		}
	default:
		if !strings.Contains(test, "--- SKIP: TestHooksSameEvents") {
			t.Errorf("TestHooksSameEvents did not skip on a kernel without trampolines")
		}
	}
}
