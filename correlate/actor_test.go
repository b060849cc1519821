package correlate_test

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// The holder a finding names is the process that pins the copy (its cwd,
// root, an fd or a mapping in it), not whichever member of the namespace
// is oldest; only when nothing pins it, a live member, said so; never a
// process of a namespace that is gone.
func TestHolderIsThePinner(t *testing.T) {
	const other = 80
	copyTable := "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	tests := []struct {
		name      string
		pins      []procfs.Pin
		exitAll   bool // every process of the holder namespace leaves before the failure
		actorPID  int
		role      string
		actorNS   uint32
		lineAfter string // the line names the actor first, after this
	}{
		{"a younger member pins the copy", []procfs.Pin{{Process: proc(21, "worker", other, ""), Kind: procfs.PinCwd, Dev: event.MakeDev(7, 0), Path: "/srv/vol/work"}},
			false, 21, finding.RolePinner, other, "held by worker[21] cwd /srv/vol/work in a namespace kept by keeper[20], worker[21]"},
		{"nothing pins the copy", nil,
			false, 20, finding.RoleMember, other, "held by keeper[20], worker[21] (namespace members; nothing pins the copy)"},
		{"the namespace is gone, a host process pins a detached copy", []procfs.Pin{{Process: proc(30, "reader", hostNS, ""), Kind: procfs.PinFD, Dev: event.MakeDev(7, 0), Path: "/file"}},
			true, 30, finding.RolePinner, hostNS, "held by reader[30] fd /file"},
		{"the namespace is gone, nothing pins", nil,
			true, 0, "", other, "(it ran worker[21], keeper[20])"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			w.send(unshareEv(20, "keeper", hostNS, other))
			w.proc.procs = append(w.proc.procs, proc(20, "keeper", other, ""), proc(21, "worker", other, ""))
			w.proc.tables[other] = copyTable
			w.send(exitEv(22, "true", other))
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			if tt.exitAll {
				w.proc.procs = w.proc.procs[:1]
				w.send(exitEv(21, "worker", other), exitEv(20, "keeper", other))
			}
			w.proc.pins = tt.pins
			w.findings = nil
			w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
			f := w.only()
			h, a := f.Actor()
			switch {
			case tt.actorPID == 0 && a != nil:
				t.Errorf("actor %s[%d] named for a namespace that is gone", a.Comm, a.PID)
			case tt.actorPID != 0 && (a == nil || a.PID != tt.actorPID || a.Role != tt.role || h.MntNS != tt.actorNS):
				t.Errorf("actor %+v in %d, want pid %d (%s) in %d", a, h.MntNS, tt.actorPID, tt.role, tt.actorNS)
			}
			if !strings.Contains(f.Line(), tt.lineAfter) {
				t.Errorf("line does not say %q:\n%s", tt.lineAfter, f.Line())
			}
		})
	}
}

// A holder is named by what it runs now, and only while it is the same
// process: runc's init exec'd the container's program after the process
// list was read (its comm then was "runc:[2:INIT]"), and a pid whose start
// time changed belongs to another program: it is not named.
func TestNamesWhatRunsNow(t *testing.T) {
	const other = 80
	tests := []struct {
		name    string
		answer  procfs.Command
		want    string   // in the line
		wantNot []string // never in it
		actor   int
	}{
		{"it exec'd", procfs.Command{Exe: "/bin/sleep", Cmdline: "sleep 600", Comm: "sleep", StartTime: 200},
			"held by sleep[20]", []string{"runc:[2:INIT]"}, 20},
		{"its pid is another process's now", procfs.Command{Exe: "/usr/bin/vim", Cmdline: "vim", Comm: "vim", StartTime: 999},
			"it has exited since", []string{"vim", "restart runc:[2:INIT][20]", "held by"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			w.send(unshareEv(20, "runc:[2:INIT]", hostNS, other))
			w.proc.procs = append(w.proc.procs, proc(20, "runc:[2:INIT]", other, "")) // start time 200
			w.proc.tables[other] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.send(exitEv(21, "true", other))
			w.proc.tables[hostNS] = hostWithoutVol
			w.proc.commands = map[int]procfs.Command{20: tt.answer}
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			f := w.only()
			line := f.Line()
			if !strings.Contains(line, tt.want) {
				t.Errorf("want %q:\n%s", tt.want, line)
			}
			for _, no := range tt.wantNot {
				if strings.Contains(line, no) {
					t.Errorf("names %q:\n%s", no, line)
				}
			}
			_, a := f.Actor()
			if (a == nil && tt.actor != 0) || (a != nil && a.PID != tt.actor) {
				t.Errorf("actor %+v, want pid %d", a, tt.actor)
			}
		})
	}
}

// A leak names the process that pins the copy too, not the namespace's
// oldest member: a leak finding is built once the teardown has settled,
// with the pins of that moment (before, a leak line said "nothing pins the
// copy" and named the oldest member while another process had its cwd in
// it).
func TestLeakNamesThePinner(t *testing.T) {
	const other = 80
	for _, settle := range []time.Duration{-1, 2 * time.Second} {
		t.Run("settle "+settle.String(), func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: settle}, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			w.send(unshareEv(20, "keeper", hostNS, other))
			w.proc.procs = append(w.proc.procs, proc(20, "keeper", other, ""), proc(21, "worker", other, ""))
			w.proc.tables[other] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.send(exitEv(22, "true", other))
			w.proc.pins = []procfs.Pin{{Process: proc(21, "worker", other, ""), Kind: procfs.PinCwd, Dev: event.MakeDev(7, 0), Path: "/srv/vol/work"}}
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			w.now = w.now.Add(3 * time.Second)
			w.send(exitEv(23, "true", hostNS))
			f := w.only()
			h, a := f.Actor()
			if f.Kind != finding.KindLeak || a == nil || a.PID != 21 || a.Role != finding.RolePinner || h.MntNS != other {
				t.Errorf("want a leak naming worker[21] as pinner in %d; got %s actor %+v:\n%s", other, f.Kind, a, f.Line())
			}
			if want := "held by worker[21] cwd /srv/vol/work"; !strings.Contains(f.Line(), want) {
				t.Errorf("line does not say %q:\n%s", want, f.Line())
			}
		})
	}
}
