package correlate_test

import (
	"errors"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// TestPinsAtTheFailure: a failure is blamed only on processes that existed
// when it happened (one that started after an rmdir's EBUSY and sits in the
// directory now did not cause it), and a pin search that could not be made
// is said in the finding, not taken for "nothing pins it".
func TestPinsAtTheFailure(t *testing.T) {
	systemd := proc(1, "systemd", hostNS, "/init.scope")
	pinAt := func(pid int, comm string, startTicks uint64) procfs.Pin {
		p := proc(pid, comm, hostNS, "")
		p.StartTime = startTicks
		return procfs.Pin{Process: p, Kind: procfs.PinCwd, Dev: event.MakeDev(7, 0), Path: "/srv/vol"}
	}
	t.Run("a process started after the failure is not named", func(t *testing.T) {
		w := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
		failAt := uint64(w.now.UnixNano()) + uint64(200e6) // send's next event time
		early, late := failAt/1e7-100, failAt/1e7+50       // ticks: 1s before, 0.5s after
		w.proc.pins = []procfs.Pin{pinAt(40, "app", early), pinAt(41, "shell-later", late)}
		w.send(failEv(50, "rmdir", hostNS, unix.SYS_RMDIR, "/srv/vol", int64(unix.EBUSY)))
		if len(w.findings) != 1 {
			t.Fatalf("%d findings, want 1", len(w.findings))
		}
		f := w.findings[0]
		if line := f.Line(); !strings.Contains(line, "app[40]") || strings.Contains(line, "shell-later") {
			t.Errorf("want app[40] named and shell-later[41] (started after the failure) not: %s", line)
		}
	})
	t.Run("only a later process: nothing to blame", func(t *testing.T) {
		w := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
		failAt := uint64(w.now.UnixNano()) + uint64(200e6)
		w.proc.pins = []procfs.Pin{pinAt(41, "shell-later", failAt/1e7+50)}
		w.send(failEv(50, "rmdir", hostNS, unix.SYS_RMDIR, "/srv/vol", int64(unix.EBUSY)))
		for _, f := range w.findings {
			if strings.Contains(f.Line(), "shell-later") {
				t.Errorf("blamed a process started after the failure: %s", f.Line())
			}
		}
	})
	t.Run("pin search failed", func(t *testing.T) {
		w := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
		w.proc.pinsErr = errors.New("read /proc: too many open files")
		f := w.c.Why(correlate.Target{Path: "/srv/vol"}, w.now)
		if f == nil || !strings.Contains(strings.Join(f.Missing, "; "), "the processes that pin it: read /proc: too many open files") {
			t.Errorf("want the failed pin search in missing, got %+v", f)
		}
	})
}
