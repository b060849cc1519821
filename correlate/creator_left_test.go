package correlate_test

import (
	"slices"
	"strings"
	"testing"

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
