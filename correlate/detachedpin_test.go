package correlate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// The holder of a private copy exits after the unmount; its copy went with
// its namespace, detached, but a process in the node's namespace still has
// a file open that it opened through that copy (/proc/HOLDER/root/...):
// the copy, in no namespace's table now, keeps the device busy. The leak
// names that process and its fd, as the failure that follows does, never
// "goes once nothing uses it" naming no one (the holder-exited scenario).
func TestDetachedWithItsNamespacePinnedElsewhere(t *testing.T) {
	const priv = 80
	settles := func(w *world) {
		w.now = w.now.Add(3 * time.Second)
		w.send(exitEv(90, "true", hostNS))
	}
	for _, tc := range []struct {
		name string
		pin  procfs.PinKind
		host string // the node's table after the unmount
		then func(w *world)
		want []finding.FindingKind
	}{
		{"the teardown settles", procfs.PinFD, hostWithoutVol, settles, []finding.FindingKind{finding.KindLeak}},
		{"a failure on it before the teardown settled", procfs.PinFD, hostWithoutVol, func(w *world) {
			w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
		}, []finding.FindingKind{finding.KindLeak, finding.KindFailure}},
		// Controls: the device itself held open is no copy's pin; a file
		// on the filesystem the node still has mounted elsewhere is
		// reached through that mount.
		{"the device itself is open", procfs.PinBlockFD, hostWithoutVol, settles, nil},
		{"the node still has it mounted elsewhere", procfs.PinFD, hostWithoutVol + "4 1 7:0 / /srv/other rw shared:4 - ext4 /dev/loop0 rw\n",
			settles, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
				map[uint32]string{hostNS: hostTable})
			w.send(unshareEv(20, "holder", hostNS, priv))
			w.proc.procs = append(w.proc.procs, proc(20, "holder", priv, ""))
			w.proc.tables[priv] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.proc.tables[hostNS] = tc.host
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			fd := 3
			reader := proc(60, "reader", hostNS, "")
			w.proc.procs = append(w.proc.procs, reader)
			w.proc.pins = []procfs.Pin{{Process: reader, Kind: tc.pin, Dev: event.MakeDev(7, 0), Path: "/file", FD: &fd}}
			w.proc.procs = slices.DeleteFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 20 })
			delete(w.proc.tables, priv)
			w.send(exitEv(20, "holder", priv))
			tc.then(w)
			for _, f := range w.findings {
				t.Log(f.Line())
			}
			if len(w.findings) != len(tc.want) {
				t.Fatalf("%d findings, want %v", len(w.findings), tc.want)
			}
			for i, k := range tc.want {
				f := w.findings[i]
				if f.Kind != k {
					t.Errorf("finding %d is a %s, want %s", i, f.Kind, k)
				}
				line := f.Line()
				for _, want := range []string{"held by reader[60] fd 3 /file", "reader[60] (fd /file) keeps the copy busy"} {
					if !strings.Contains(line, want) {
						t.Errorf("%s lacks %q:\n%s", f.Kind, want, line)
					}
				}
				if _, a := f.Actor(); a == nil || a.PID != 60 || a.Role != finding.RolePinner {
					t.Errorf("%s actor %+v, want the pinner reader[60]:\n%s", f.Kind, a, line)
				}
			}
		})
	}
}
