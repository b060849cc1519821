package correlate_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// TestFixNamesWhoKeepsTheNamespaceAfterItsCreator: the process that made a
// private namespace has exited, and one or two processes it started keep
// the namespace and its copy: the leak's fix names exactly them (not the
// creator, whose pid means nothing now), as what keeps the namespace.
func TestFixNamesWhoKeepsTheNamespaceAfterItsCreator(t *testing.T) {
	for _, tc := range []struct {
		name  string
		procs []procfs.Process
		want  string
	}{
		{"one process", []procfs.Process{proc(21, "worker", 80, "")}, "stop or restart worker[21], which keeps mnt:[80] now"},
		{"two processes", []procfs.Process{proc(21, "worker", 80, ""), proc(22, "helper", 80, "")},
			"stop or restart worker[21], helper[22], which keep mnt:[80] now"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			w.send(unshareEv(20, "holder", hostNS, 80))
			w.proc.procs = append(append(w.proc.procs, proc(20, "holder", 80, "")), tc.procs...)
			w.proc.tables[80] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.send(exitEv(91, "true", hostNS)) // the namespace's processes and table are read
			w.proc.procs = slices.DeleteFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 20 })
			w.send(exitEv(20, "holder", 80))
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			f := w.only()
			if f.Kind != finding.KindLeak || f.Cause != finding.CauseUnshare || !strings.HasPrefix(f.Fix, tc.want+";") {
				t.Errorf("want an unshare leak whose fix starts %q:\n%s", tc.want, f.Line())
			}
		})
	}
}

// The process that made mnt:[80] left it by setns, its last process, and
// the process list cannot be read at the unmount that leaves a copy
// there: nothing is known to run in mnt:[80]. With no process pinning the
// copy the fix names no pinner ("the processes in mnt:[80]", what a list
// would show); with one, it names it as what keeps the copy busy.
func TestFixAfterTheCreatorLeftBySetnsAndNoProcessList(t *testing.T) {
	for _, tc := range []struct {
		name string
		pins []procfs.Pin
		want string
	}{
		{"no pin", nil, "stop or restart the processes in mnt:[80]; " +
			"create such namespaces with slave propagation (unshare --propagation slave) so unmounts reach them"},
		{"a reader pins it", []procfs.Pin{pinOn(proc(60, "reader", 80, ""), procfs.PinFD, "/srv/vol/file")},
			"nothing runs in mnt:[80] any more; reader[60] (fd /srv/vol/file) keeps the copy busy: stop it or have it close it; " +
				"create such namespaces with slave propagation (unshare --propagation slave) so unmounts reach them"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			w.send(unshareEv(20, "agent", hostNS, 80))
			w.proc.procs = append(w.proc.procs, proc(20, "agent", 80, ""))
			w.proc.tables[80] = privateCopy
			w.send(exitEv(21, "true", 80))
			setns := base(event.KindSetns, 20, "agent", hostNS, 308, 0)
			setns.MntNSBefore, setns.MntNSAfter = 80, hostNS
			w.proc.procs[1].MntNS = hostNS
			w.proc.procsErr = errors.New("open /proc: too many open files")
			w.send(setns)
			w.proc.pins = tc.pins
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "containerd", hostNS, "/srv/vol", 0))
			if f := w.only(); f.Kind != finding.KindLeak || f.Fix != tc.want {
				t.Errorf("got %s fix %q, want a leak with fix %q", f.Kind, f.Fix, tc.want)
			}
		})
	}
}
