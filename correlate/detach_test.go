package correlate_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
)

// A successful rmdir or unlink of a mountpoint detaches its copies in every
// namespace and makes no event: a failure after it must not cite a copy
// the kernel has detached, nor name the process of a namespace whose copy
// is gone (the tables it cites are read again); a detached copy a process
// still keeps busy is named as detached, with that process (the copy still
// mounted elsewhere leads: its namespace's member is the one named).
func TestFailureAfterDetach(t *testing.T) {
	const older, younger = 80, 81
	copyAt := func(paths ...string) string {
		s := "110 109 254:0 / / rw - ext4 /dev/vda rw\n"
		for i, p := range paths {
			s += strconv.Itoa(111+i) + " 110 7:0 / " + p + " rw - ext4 /dev/loop0 rw\n"
		}
		return s
	}
	tests := []struct {
		name   string
		pins   []procfs.Pin
		actor  int
		ns     uint32
		inLine string
	}{
		{"the older copy was detached, the younger holds", nil, 30, younger, "still mounted in mnt:[81] at /srv/vol2"},
		{"the older copy was detached and is still pinned", []procfs.Pin{{Process: proc(21, "worker", older, ""), Kind: procfs.PinCwd, Dev: event.MakeDev(7, 0), Path: "/"}},
			30, younger, "kept busy in mnt:[80], whose copy the kernel detached, held by worker[21] cwd /"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable + "4 1 7:0 / /srv/vol2 rw shared:4 - ext4 /dev/loop0 rw\n"})
			w.send(unshareEv(20, "keeper", hostNS, older))
			w.proc.procs = append(w.proc.procs, proc(20, "keeper", older, ""), proc(21, "worker", older, ""))
			w.proc.tables[older] = copyAt("/srv/vol")
			w.send(unshareEv(30, "other", hostNS, younger))
			w.proc.procs = append(w.proc.procs, proc(30, "other", younger, ""))
			w.proc.tables[younger] = copyAt("/srv/vol", "/srv/vol2")
			w.send(exitEv(22, "true", older))
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			w.send(umountEv(40, "umount", hostNS, "/srv/vol2", 0))
			w.send(exitEv(23, "true", hostNS)) // the leaks are reported, the tables read
			// rmdir /srv/vol on the node: the kernel detaches both copies at
			// /srv/vol, no event says so.
			w.proc.tables[older] = copyAt()
			w.proc.tables[younger] = copyAt("/srv/vol2")
			w.proc.pins = tt.pins
			w.findings = nil
			w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
			f := w.only()
			h, a := f.Actor()
			if a == nil || a.PID != tt.actor || h.MntNS != tt.ns {
				t.Errorf("actor %+v in %v, want pid %d in %d:\n%s", a, h, tt.actor, tt.ns, f.Line())
			}
			for _, h := range f.Holders {
				if h.Where == "/srv/vol" {
					t.Errorf("cites a copy the kernel detached: %s", f.Line())
				}
			}
			if !strings.Contains(f.Line(), tt.inLine) {
				t.Errorf("line does not say %q:\n%s", tt.inLine, f.Line())
			}
			if f.Cause != finding.CauseUnshare {
				t.Errorf("cause %s", f.Cause)
			}
		})
	}
}
