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

// unshare --mount=FILE whose bind the kernel refuses (the new namespace's
// id is not above the one it would be bound into: ids come in per-CPU
// batches) exits as "unshare" and its namespace dies with it; tried again
// on another CPU, the new namespace gets the freed inode, its bind is
// made, and its process becomes true and exits. The bind keeps the second
// namespace, and a failure on the device it holds a copy of names the
// second try's unshare, by what it became (true), as the creator: never
// the first try, which made a namespace that is gone.
//
// A process list read between the second try's unshare and its exit
// event, when /proc no longer has the process, retires the namespace
// (nothing runs in it, and the node's table read last does not have the
// bind yet); the exit, handled then, must still reach it: the bind brings
// it back, and its creator is true[22], not unshare[22]. That holds for a
// single try as well.
//
// The events are the kernel's order (recorded: e2e/scenarios
// bind-kept-entered with the pin made on the second CPU): the first try's
// exit is submitted in the exit tracepoint, before its namespace is
// dropped and its inode freed, so before the second try's unshare. The
// correlator reads /proc behind the kernel: the world it reads is already
// the one after the second try (no process in the namespace, the bind in
// the node's table), and a process list read while the second try's exit
// is still to come (a collection, for another namespace whose last
// process exited) finds no process in the namespace.
func TestKeptNamespaceMadeOnTheSecondTry(t *testing.T) {
	const (
		kept    = 95
		other   = 97
		bindAt  = "/run/mntns/keep"
		nsfsRow = "9 1 0:4 mnt:[95] /run/mntns/keep rw - nsfs nsfs rw\n"
		// otherTable is a container's: nothing of the node's volume.
		otherTable = "120 119 254:0 / / rw - ext4 /dev/vda rw\n"
	)
	for _, tc := range []struct {
		name     string
		firstTry bool          // a first try, refused, made a namespace with the inode before
		gc       time.Duration // a collection (and its process list) between the events
		ids      bool          // the birth ids were read (each try's own)
	}{
		{"two tries, no list read between the events", true, 0, false},
		{"two tries, a list read between the events", true, 5 * time.Millisecond, false},
		{"two tries, a list read between the events, birth ids known", true, 5 * time.Millisecond, true},
		{"one try, a list read between the events", false, 5 * time.Millisecond, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{GCInterval: tc.gc},
				[]procfs.Process{proc(1, "systemd", hostNS, ""), proc(60, "sleep", other, "")},
				map[uint32]string{hostNS: hostTable, other: otherTable})
			w.proc.tables[kept] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			first, second := unshareEv(20, "unshare", hostNS, kept), unshareEv(22, "unshare", hostNS, kept)
			if tc.ids {
				first.NewMntNSID, second.NewMntNSID = 33061, 33062
				w.proc.nsids = map[uint32]uint64{kept: 33062}
			}
			// /proc is read behind the kernel: while the first try's
			// events are handled its process is gone already, and the
			// second try has not bound its namespace yet.
			w.proc.procs = w.proc.procs[:1]
			if tc.firstTry {
				refused := mountEv(21, "unshare", hostNS, "/proc/20/ns/mnt", bindAt, "", unix.MS_BIND, -int64(unix.EINVAL))
				w.sendEvery(4*time.Millisecond, first, refused, exitEv(21, "unshare", hostNS), exitEv(20, "unshare", kept))
			}
			// While the second try's unshare is, its process is in the
			// new namespace, the bind not made yet.
			w.proc.procs = append(w.proc.procs, proc(22, "unshare", kept, ""))
			w.sendEvery(4*time.Millisecond, second)
			// From its bind on, it is done: no process in the namespace,
			// the bind in the node's table.
			w.proc.procs = w.proc.procs[:1]
			w.proc.tables[hostNS] = hostTable + nsfsRow
			w.proc.nsfiles = map[string]uint32{bindAt: kept}
			bound := mountEv(23, "unshare", hostNS, "/proc/22/ns/mnt", bindAt, "", unix.MS_BIND, 0)
			w.sendEvery(4*time.Millisecond, bound, exitEv(60, "sleep", other), exitEv(23, "unshare", hostNS), exitEv(22, "true", kept))

			w.proc.tables[hostNS] = hostWithoutVol + nsfsRow
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			w.findings = nil
			w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
			f := w.only()
			line := f.Line()
			t.Log(line)
			if f.Cause != finding.CauseUnshare || !strings.Contains(line, "created by true[22]") {
				t.Errorf("cause %q: want the second try's unshare, by true[22], as the creator:\n%s", f.Cause, line)
			}
			if !actorNamed(f, "true") {
				t.Errorf("no evidence event by true: %+v", f.Evidence)
			}
		})
	}
}

// sendEvery delivers events d apart (a process's own events come ms
// apart, closer than the settle delay).
func (w *world) sendEvery(d time.Duration, evs ...*event.Event) {
	for _, ev := range evs {
		w.now = w.now.Add(d)
		ev.Time, ev.MonoNS = w.now, uint64(w.now.UnixNano())
		w.c.Handle(ev)
	}
}
