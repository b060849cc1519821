package tracer_test

import (
	"os"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/tracer"
)

// TestMissingOptionalSyscall: an optional handler of a syscall the kernel
// lacks disables its events with one warning, and tracing works.
func TestMissingOptionalSyscall(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	cfg := tracer.WithBogusSyscall(tracer.Config{}, "bogus", true)
	c := startTracerWith(t, cfg, zap.New(core))

	if got := c.tr.Disabled(); len(got) != 1 || got[0] != "bogus" {
		t.Errorf("Disabled() = %q, want [bogus]", got)
	}
	warnings := logs.FilterMessageSnippet("syscalls missing").All()
	if len(warnings) != 1 || logs.Len() != 1 {
		t.Fatalf("%d warnings about missing syscalls (%d logs), want exactly 1", len(warnings), logs.Len())
	}
	fields := warnings[0].ContextMap()
	if d, _ := fields["disabled"].([]any); len(d) != 1 || d[0] != "bogus" {
		t.Errorf("warning field disabled = %v, want [bogus]", fields["disabled"])
	}
	if sc, _ := fields["syscall"].([]any); len(sc) != 1 || sc[0] != "mntleak_bogus_bogus" {
		t.Errorf("warning field syscall = %v", fields["syscall"])
	}

	dir := t.TempDir()
	privtest.Mount(t, "mntleak-optional", dir, "tmpfs", 0, "")
	ev := c.waitFor(t, "mount", func(e *event.Event) bool { return e.Kind == event.KindMount && e.Target == dir })
	if ev.PID != ownPID() || ev.Ret != 0 {
		t.Errorf("mount event pid %d ret %d, want %d 0", ev.PID, ev.Ret, ownPID())
	}
}

// TestMissingRequiredSyscall: a required handler of a missing syscall
// fails New with an error that names it, and nothing stays attached.
func TestMissingRequiredSyscall(t *testing.T) {
	privtest.Require(t)
	core, logs := observer.New(zap.WarnLevel)
	cfg := tracer.WithBogusSyscall(tracer.Config{Sink: func(*event.Event) {}}, "bogus", false)
	before := openFDs(t)
	tr, err := tracer.New(cfg, zap.New(core))
	if err == nil {
		tr.Close()
		t.Fatal("New succeeded without a required syscall")
	}
	want := "bogus events need syscall mntleak_bogus_bogus: the kernel has none (no __x64_sys_mntleak_bogus_bogus in its BTF)"
	if !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n") {
		t.Errorf("error %q, want one line starting %q", err, want)
	}
	if logs.Len() != 0 {
		t.Errorf("unexpected logs: %v", logs.All())
	}
	// Everything New loaded and attached is closed again: programs, maps
	// and links are all file descriptors of this process.
	if after := openFDs(t); after != before {
		t.Errorf("%d open file descriptors after the failed New, %d before", after, before)
	}
}

func openFDs(t *testing.T) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}
