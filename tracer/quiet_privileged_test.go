package tracer_test

import (
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/tracer"
)

// exitOf matches the exit of process pid.
func exitOf(pid int) func(*event.Event) bool {
	return func(ev *event.Event) bool { return ev.Kind == event.KindExit && int(ev.PID) == pid }
}

// quietExit runs a process that exits at once, with exits quiet, and
// returns its pid.
func quietExit(t *testing.T, c *collector) int {
	t.Helper()
	if err := c.tr.SetQuietExits(true); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("true")
	if err := cmd.Run(); err != nil {
		t.Fatal(err)
	}
	return cmd.Process.Pid
}

// TestQuietExitsComeAtTheReadersWakeup: a quiet exit's record wakes no
// reader, and nothing else may come on a quiet node; the reader's own
// wakeup (QuietExitDelay) reads it.
func TestQuietExitsComeAtTheReadersWakeup(t *testing.T) {
	c := startTracerWith(t, tracer.WithoutLostCheckWakeup(tracer.Config{Buffer: tracer.BufferRingbuf}), zaptest.NewLogger(t))
	c.waitFor(t, "exit of the quiet process", exitOf(quietExit(t, c)))
}

// TestQuietExitsComeBeforeTheNextRecord: without the reader's wakeup, a
// quiet exit is read with the next record that wakes the reader, and
// before it: a failed unmount, which must wake the reader although a quiet
// record is pending before it (the kernel's own rule wakes it only for
// the record right after what it read).
func TestQuietExitsComeBeforeTheNextRecord(t *testing.T) {
	cfg := tracer.WithoutQuietWake(tracer.WithoutLostCheckWakeup(tracer.Config{Buffer: tracer.BufferRingbuf}))
	c := startTracerWith(t, cfg, zaptest.NewLogger(t))
	pid := quietExit(t, c)
	missing := filepath.Join(t.TempDir(), "not-a-mount-point")
	tid := onThread(func() {
		if err := unix.Unmount(missing, 0); err == nil {
			t.Errorf("umount %s succeeded", missing)
		}
	})
	umount := c.waitFor(t, "the failed umount", func(ev *event.Event) bool {
		return ev.Kind == event.KindUmount && int(ev.TID) == tid && ev.Target == missing
	})
	all := c.matching(func(*event.Event) bool { return true })
	at := slices.IndexFunc(all, func(ev event.Event) bool { return exitOf(pid)(&ev) })
	if at < 0 || all[at].MonoNS > umount.MonoNS {
		t.Fatalf("the quiet exit of %d is not read before the umount that woke the reader (at %d of %d)", pid, at, len(all))
	}
}
