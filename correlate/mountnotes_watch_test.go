package correlate_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// TestTableReadWhenItsNotesBegin: a namespace made by unshare is watched at
// once (its watch-on note comes right after its creation), then the node
// is quiet for a second: no event to settle its table on. The node's
// `ip netns delete` (an unmount, then an unlink) detaches the holder's
// copy, the kernel's note of it comes before the unmount's event, and the
// unmount is the first event to read the holder's table: it no longer
// shows the copy. The copy, which the holder keeps by an open file, was a
// leak nobody reported (cmd's TestDetachedNetnsKeptByAnOpenFile, 1 run of
// 8 with a crowd on the node: the daemon read the holder's table first at
// the setns that began the delete, 3 ms after the detach). Read when its
// notes begin, the table shows the copy, the note takes it off, and the
// unmount finds it detached and held. With reread, the holder's own
// propagation change (unshare's MS_PRIVATE|MS_REC, which the notes do not
// tell) had made its table stale, and it is read again after the detach,
// before the unmount: the table before the notes still shows the copy
// (the next failure in the same loop: the re-read took the notes' table for
// the one before it). Control: a holder that had no copy gives no finding.
func TestTableReadWhenItsNotesBegin(t *testing.T) {
	const priv = 80
	const copyLine = "111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	for _, tc := range []struct{ hadCopy, reread bool }{{true, false}, {true, true}, {false, false}, {false, true}} {
		hadCopy := tc.hadCopy
		t.Run(fmt.Sprintf("copy=%v,reread=%v", hadCopy, tc.reread), func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
				map[uint32]string{hostNS: hostTable})
			w.send(unshareEv(20, "holder", hostNS, priv))
			holder := proc(20, "holder", priv, "")
			w.proc.procs = append(w.proc.procs, holder)
			w.proc.tables[priv] = noteRoot
			if hadCopy {
				w.proc.tables[priv] += copyLine
			}
			w.c.Note(event.MountNote{Time: w.now, NS: priv, Watch: event.WatchOn})
			if tc.reread {
				w.send(mountEv(20, "holder", priv, "", "/", "", unix.MS_PRIVATE|unix.MS_REC, 0))
			}

			w.now = w.now.Add(time.Second)
			w.proc.tables[priv] = noteRoot
			w.proc.tables[hostNS] = hostWithoutVol
			if hadCopy {
				w.c.Note(event.MountNote{Time: w.now, NS: priv, Detach: true, PID: 400, Mount: mountLine(t, copyLine)})
				fd := 7
				w.proc.pins = []procfs.Pin{{Process: holder, Kind: procfs.PinFD, Dev: event.MakeDev(7, 0), Path: "/file", FD: &fd}}
			}
			if tc.reread {
				w.send(exitEv(95, "nsenter", hostNS)) // the holder's table settles: read again
				if tb := w.c.Ledger().Table(priv); tb == nil || len(tb.Mounts) != 1 {
					t.Fatalf("the holder's table after the detach: %v, want its root alone", tb)
				}
			}
			w.send(umountEv(400, "ip", hostNS, "/srv/vol", 0))
			w.now = w.now.Add(3 * time.Second)
			w.send(exitEv(90, "true", hostNS))

			var got []string
			for _, f := range w.findings {
				s := fmt.Sprintf("%s %s: %v", f.Kind, f.Object.Path, holdersOf(f))
				for _, h := range f.Holders {
					for _, p := range h.Pins {
						s += fmt.Sprintf(" pin %s[%d] %s", p.Comm, p.PID, p.Pin)
					}
				}
				got = append(got, s)
			}
			var want []string
			if hadCopy {
				want = []string{fmt.Sprintf("%s /srv/vol: [mnt:[%d] /srv/vol] pin holder[20] fd", finding.KindLeak, priv)}
			}
			if !slices.Equal(got, want) {
				t.Errorf("findings %q, want %q", got, want)
			}
		})
	}
}
