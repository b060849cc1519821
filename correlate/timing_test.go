package correlate_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
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
		w.send(failEv(50, "rmdir", hostNS, 84 /* rmdir on x86_64 */, "/srv/vol", int64(unix.EBUSY)))
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
		w.send(failEv(50, "rmdir", hostNS, 84 /* rmdir on x86_64 */, "/srv/vol", int64(unix.EBUSY)))
		for _, f := range w.findings {
			if strings.Contains(f.Line(), "shell-later") {
				t.Errorf("blamed a process started after the failure: %s", f.Line())
			}
		}
	})
	t.Run("some processes unreadable", func(t *testing.T) {
		w := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
		failAt := uint64(w.now.UnixNano()) + uint64(200e6)
		w.proc.pins = []procfs.Pin{pinAt(40, "app", failAt/1e7-100)}
		w.proc.pinsErr = &procfs.UnreadableError{Processes: 3}
		w.send(failEv(50, "rmdir", hostNS, 84 /* rmdir on x86_64 */, "/srv/vol", int64(unix.EBUSY)))
		if len(w.findings) != 1 {
			t.Fatalf("%d findings, want 1", len(w.findings))
		}
		f := w.findings[0]
		if !strings.Contains(f.Line(), "app[40]") || !strings.Contains(f.Line(), "(missing: the processes that pin it: 3 processes unreadable)") {
			t.Errorf("want app[40] named and the 3 unreadable processes said: %s", f.Line())
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

// TestRestartThroughAWrapper: a daemon started by a wrapper that unshares
// and then execs it (unshare(1) --propagation slave dockerd) is recognised
// as restarted whether or not a process list has shown the exec by the
// time of the failure: its executable says what it runs as.
func TestRestartThroughAWrapper(t *testing.T) {
	systemd := proc(1, "systemd", hostNS, "/init.scope")
	w := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
	w.send(unshareEv(90, "unshare", hostNS, 10))
	w.proc.procs = append(w.proc.procs, proc(90, "dockerd", 10, ""), proc(100, "containerd-shim", 10, ""))
	w.proc.tables[10] = "40 39 254:0 / / rw master:1 - ext4 /dev/vda rw\n50 40 0:60 / /var/lib/docker/overlay2/x/merged rw - overlay overlay rw\n"
	w.send(mountEv(90, "dockerd", 10, "overlay", "/var/lib/docker/overlay2/x/merged", "overlay", 0, 0))
	// A process list is read (a failure elsewhere, a minute on): it shows
	// the first generation as dockerd and containerd-shim.
	w.now = w.now.Add(2 * time.Minute)
	w.send(failEv(300, "rmdir", hostNS, 84 /* rmdir on x86_64 */, "/srv/vol", int64(unix.EBUSY)))
	w.findings = nil
	w.send(exitEv(90, "dockerd", 10))
	// The second generation: its creator is still "unshare" to the
	// lineage (no process list since), dockerd to /proc.
	w.send(unshareEv(200, "unshare", hostNS, 11))
	w.proc.procs = []procfs.Process{systemd, proc(100, "containerd-shim", 10, ""), proc(200, "dockerd", 11, "")}
	w.proc.tables[11] = "60 59 254:0 / / rw master:1 - ext4 /dev/vda rw\n"
	w.send(umountEv(201, "umount", 11, "/var/lib/docker/overlay2/x/merged", -int64(unix.EINVAL)))
	if len(w.findings) != 1 {
		t.Fatalf("%d findings, want 1", len(w.findings))
	}
	if f := w.findings[0]; f.Cause != finding.CauseMountflagsRestart || !strings.Contains(f.Line(), "dockerd was restarted") {
		t.Errorf("cause %s, want mountflags-restart naming dockerd: %s", f.Cause, f.Line())
	}
}

// TestUmountFromInside: a busy umount2 whose caller's cwd (recorded by the
// kernel at the call) is on the mount or below it is explained as that,
// not as an unknown kernel user, although the caller is gone by the time
// /proc is read and nothing else pins it.
func TestUmountFromInside(t *testing.T) {
	systemd := proc(1, "systemd", hostNS, "/init.scope")
	for _, tt := range []struct {
		name       string
		cwd, root  int32
		wantInside string
	}{
		{"cwd on the mount", 3, 1, "umount[50]'s own cwd is inside /srv/vol"},
		{"cwd elsewhere", 2, 1, ""},
		{"not recorded (an older recording)", 0, 0, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{systemd}, map[uint32]string{hostNS: hostTable})
			ev := umountEv(50, "umount", hostNS, "/srv/vol", -int64(unix.EBUSY))
			ev.CwdMntID, ev.RootMntID = tt.cwd, tt.root
			w.send(ev)
			if len(w.findings) != 1 {
				t.Fatalf("%d findings, want 1", len(w.findings))
			}
			line := w.findings[0].Line()
			if tt.wantInside != "" {
				if !strings.Contains(line, tt.wantInside) || strings.Contains(line, "kernel user") || !strings.Contains(line, "Fix: cd out of /srv/vol") {
					t.Errorf("want %q and the cd fix, no kernel-user guess: %s", tt.wantInside, line)
				}
			} else if strings.Contains(line, "own cwd") {
				t.Errorf("blamed the caller's cwd: %s", line)
			}
		})
	}
}
