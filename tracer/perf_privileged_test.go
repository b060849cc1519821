package tracer_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/tracer"
)

// TestPerfBufferEndToEnd: with the perf event array, mount and umount
// events made on one CPU arrive decoded and in the order they were made,
// and an EBUSY failure arrives with its path; nothing is lost (cleanup).
func TestPerfBufferEndToEnd(t *testing.T) {
	privtest.RequireCommands(t, "rmdir")
	c := startTracerWith(t, tracer.Config{Buffer: tracer.BufferPerf}, zaptest.NewLogger(t))
	if c.tr.Buffer() != tracer.BufferPerf {
		t.Fatalf("buffer %s, want perf", c.tr.Buffer())
	}
	base := t.TempDir()
	const n = 8
	targets := make([]string, n)
	for i := range targets {
		targets[i] = privtest.Mkdir(t, filepath.Join(base, fmt.Sprintf("m%d", i)))
	}
	// One CPU's buffer is in order; records of different CPUs are not.
	var opErr error
	tid := onThread(func() {
		var cpu unix.CPUSet
		cpu.Set(runtime.NumCPU() - 1)
		if opErr = unix.SchedSetaffinity(0, &cpu); opErr != nil {
			return
		}
		for _, dir := range targets {
			if opErr = unix.Mount("mntleak-perf", dir, "tmpfs", 0, ""); opErr != nil {
				return
			}
			if opErr = unix.Unmount(dir, 0); opErr != nil {
				return
			}
		}
	})
	if opErr != nil {
		t.Fatal(opErr)
	}
	ours := func(e *event.Event) bool {
		return (e.Kind == event.KindMount || e.Kind == event.KindUmount) && e.TID == uint32(tid)
	}
	c.waitFor(t, "last umount", func(e *event.Event) bool { return ours(e) && e.Kind == event.KindUmount && e.Target == targets[n-1] })
	got := c.matching(ours)
	if len(got) != 2*n {
		t.Fatalf("%d mount/umount events, want %d", len(got), 2*n)
	}
	for i, ev := range got {
		wantKind := event.KindMount
		if i%2 == 1 {
			wantKind = event.KindUmount
		}
		if ev.Kind != wantKind || ev.Target != targets[i/2] || ev.Ret != 0 || ev.Comm == "" {
			t.Errorf("event %d: %s %q ret=%d comm=%q, want %s %q = 0", i, ev.Kind, ev.Target, ev.Ret, ev.Comm, wantKind, targets[i/2])
		}
		if ev.Kind == event.KindMount && (ev.FSType != "tmpfs" || ev.Source != "mntleak-perf") {
			t.Errorf("event %d: fstype %q source %q, want tmpfs mntleak-perf", i, ev.FSType, ev.Source)
		}
		if i > 0 && ev.MonoNS < got[i-1].MonoNS {
			t.Errorf("event %d at %d ns comes before event %d at %d ns", i, ev.MonoNS, i-1, got[i-1].MonoNS)
		}
	}

	busy := privtest.Mkdir(t, filepath.Join(base, "busy"))
	privtest.Mount(t, "mntleak-busy", busy, "tmpfs", 0, "")
	cmd := exec.Command("rmdir", busy)
	if cmd.Run() == nil {
		t.Fatal("rmdir of a mountpoint succeeded")
	}
	ev := c.waitFor(t, "rmdir EBUSY", func(e *event.Event) bool {
		return e.Kind == event.KindFailure && e.PID == uint32(cmd.Process.Pid)
	})
	if ev.Path != busy || ev.Syscall != "rmdir" || ev.Errno != "EBUSY" || ev.Comm != "rmdir" {
		t.Errorf("got %s %q %s by %q, want rmdir %q EBUSY by rmdir", ev.Syscall, ev.Path, ev.Errno, ev.Comm, busy)
	}
}
