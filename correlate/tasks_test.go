package correlate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/procfs"
)

// container90 is runc starting a container in boundWorld: its child
// unshares mnt:[90] and exits at once; the container's init, runc:[2:INIT]
// [41], is born inside (no event says so) and mounts a tmpfs at /srv/c
// there, which the node does not have.
func container90(w *world) {
	unshare := unshareEv(40, "runc:[1:CHILD]", hostNS, 90)
	unshare.NewMntNSID = 9001
	w.send(unshare)
	w.proc.procs = append(w.proc.procs, proc(41, "runc:[2:INIT]", 90, ""))
	w.proc.tables[90] = "120 119 254:0 / / rw - ext4 /dev/vda rw\n121 120 0:90 / /srv/c rw - tmpfs tmpfs rw\n"
	w.proc.nsids = map[uint32]uint64{90: 9001}
	w.send(exitEv(40, "runc:[1:CHILD]", 90),
		mountEv(41, "runc:[2:INIT]", 90, "tmpfs", "/srv/c", "tmpfs", 0, 0))
}

// A failure that must read the table of a namespace none of whose known
// processes is left (runc's child made it and exited) finds its processes
// in the tracer's tasks, not in a listing of /proc, and gives the finding
// a listing gives; where the tasks cannot tell (a namespace from before
// tracing, an inode another namespace has now), /proc is listed as before.
func TestFailureFindsANamespacesProcessesInTheTasks(t *testing.T) {
	for _, tc := range []struct {
		name  string
		setup func(w *world)
		lists int // process lists the failure reads with the tasks
		reads int // processes it reads alone with them
	}{
		{"the container's init is born inside, unseen", container90, 0, 1},
		{"the container's processes are all gone", func(w *world) {
			container90(w)
			w.proc.procs = slices.DeleteFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 41 })
			w.send(exitEv(41, "sleep", 90))
		}, 0, 0},
		{"a namespace from before tracing: its processes need not be in the tasks", func(w *world) {
			old := []procfs.Process{proc(50, "old", 95, ""), proc(51, "other", 95, "")}
			w.proc.procs = append(w.proc.procs, old...)
			w.proc.tables[95] = "130 129 254:0 / / rw - ext4 /dev/vda rw\n131 130 0:90 / /srv/c rw - tmpfs tmpfs rw\n"
			w.now = w.now.Add(time.Minute) // the next failure lists /proc, and finds mnt:[95]
			w.send(umountEv(30, "umount", hostNS, "/srv/third", -int64(unix.EINVAL)))
			w.send(mountEv(50, "old", 95, "tmpfs", "/srv/c", "tmpfs", 0, 0))
			w.proc.procs = slices.DeleteFunc(w.proc.procs, func(p procfs.Process) bool { return p.MntNS == 95 })
			w.send(exitEv(50, "old", 95), exitEv(51, "other", 95))
		}, 1, 0},
		{"the inode is another namespace's now (its birth id)", func(w *world) {
			container90(w)
			w.proc.nsids[90] = 9002
		}, 1, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines [3]string
			for _, bound := range []boundBy{boundList, boundTasks} {
				w, p := boundWorld(t, 10, bound)
				tc.setup(w)
				p.lists, p.reads, w.findings = 0, 0, nil
				w.send(umountEv(30, "umount", hostNS, "/srv/c", -int64(unix.EINVAL)))
				w.send(umountEv(30, "umount", hostNS, "/srv/src", -int64(unix.EINVAL)))
				var got []string
				for _, f := range w.findings {
					got = append(got, f.Line())
				}
				lines[bound] = strings.Join(got, "\n")
				t.Logf("%s: %d lists, %d processes read alone\n%s", bound, p.lists, p.reads, lines[bound])
				switch {
				case bound == boundList && p.lists != 1:
					t.Errorf("%s: %d process lists, want 1 (the namespace's known processes are gone)", bound, p.lists)
				case bound == boundTasks && (p.lists != tc.lists || p.reads != tc.reads):
					t.Errorf("%s: %d process lists and %d processes read alone, want %d and %d", bound, p.lists, p.reads, tc.lists, tc.reads)
				}
			}
			if lines[boundTasks] != lines[boundList] {
				t.Errorf("with the tracer's tasks the findings differ from a listing's")
			}
		})
	}
}
