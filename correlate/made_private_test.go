package correlate_test

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// TestLeakOfASlaveNamespaceMadePrivate: a namespace made a slave of the
// host (unshare --propagation slave) whose process then made its root
// private cut itself off: the host's unmount no longer reaches its copy.
// The leak cites that mount --make-rprivate, who ran it and when, and its
// fix is to keep the root a slave there, not to create the namespace as a
// slave (it was one).
func TestLeakOfASlaveNamespaceMadePrivate(t *testing.T) {
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
	w.send(unshareEv(20, "holder", hostNS, 80))
	w.send(mountEv(20, "holder", 80, "none", "/", "", unix.MS_REC|unix.MS_SLAVE, 0))
	w.send(mountEv(20, "holder", 80, "none", "/", "", unix.MS_REC|unix.MS_PRIVATE, 0))
	w.proc.procs = append(w.proc.procs, proc(20, "holder", 80, ""))
	w.proc.tables[80] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
	f := w.only()
	if f.Kind != finding.KindLeak || f.Cause != finding.CauseUnshare {
		t.Fatalf("want an unshare leak: %s", f.Line())
	}
	if !strings.Contains(f.Summary, "; holder[20] made / private in it at 12:01:00.600") {
		t.Errorf("the summary does not say who made / private in mnt:[80], and when: %s", f.Summary)
	}
	if !slices.ContainsFunc(f.Evidence, func(e finding.Evidence) bool {
		return e.Event != nil && e.Event.PID == 20 && strings.HasPrefix(e.What, "made private there: ")
	}) {
		t.Errorf("the mount --make-rprivate is not cited: %+v", f.Evidence)
	}
	if want := "/ was made private in mnt:[80] after the namespace was copied as a slave"; !strings.Contains(f.Fix, want) {
		t.Errorf("fix %q, want %q", f.Fix, want)
	}
}
