package correlate_test

import (
	"fmt"
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

// The kernel's note of an unmount read before the tracer's event of it
// (the daemon runs behind the kernel): the unmount takes its note
// (takeUnmountNote) when the tables no longer show what it unmounted.

// TestUnmountNotedBeforeItsEvent: the kernel's note of the node's own
// unmount comes before the tracer's event of it (the notes are read beside
// the events, which the daemon reads behind the kernel), and the node's
// table is read again in between (an unrelated change made it stale): by
// the unmount's event, neither the node's latest table nor the one before
// it shows what was unmounted. The note told it: the mount the unmount's
// own process detached at that path in that namespace. Without it the
// unmount looked like one of something never seen mounted, and the
// holder's copy of the tmpfs was never reported (cmd
// TestLeakKeptAtAnotherPath/tmpfs, under load). The controls: a note by
// another process (a propagated unmount), of another path, or in another
// namespace does not stand for this unmount.
func TestUnmountNotedBeforeItsEvent(t *testing.T) {
	const holder, sibling = 80, 81
	const vol = "4 1 0:40 / /pods/vol rw shared:4 - tmpfs vol rw\n"
	const other = "5 1 0:41 / /pods/other rw shared:5 - tmpfs other rw\n"
	const siblingCopy = "131 110 0:40 / /pods/vol rw - tmpfs vol rw\n"
	for _, tc := range []struct {
		name string
		ns   uint32 // the detach note's
		pid  uint32
		line string
		leak bool
	}{
		{"the unmount's own note", hostNS, 400, vol, true},
		{"another process's note", hostNS, 401, vol, false},
		{"a note of another path", hostNS, 400, other, false},
		{"a note in another namespace", sibling, 400, siblingCopy, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: -1}, []procfs.Process{proc(1, "systemd", hostNS, "")},
				map[uint32]string{hostNS: hostTable + vol + other})
			w.c.Note(event.MountNote{NS: hostNS, Watch: event.WatchOn})
			w.send(unshareEv(20, "agent", hostNS, holder), unshareEv(30, "agent", hostNS, sibling)) // read the node's table, with the volume
			w.proc.procs = append(w.proc.procs, proc(20, "agent", holder, ""), proc(30, "agent", sibling, ""))
			w.proc.tables[holder] = noteRoot + "111 110 0:40 / /pods/vol rw - tmpfs vol rw\n"
			w.proc.tables[sibling] = noteRoot + siblingCopy
			w.send(exitEv(21, "true", holder), exitEv(31, "true", sibling))
			// The kernel unmounts /pods/vol; the note comes first.
			w.proc.tables[hostNS] = hostTable + other
			if tc.ns == sibling {
				w.proc.tables[sibling] = noteRoot
			}
			// Read after the unmount it tells of (the events below are
			// the kernel's, from before the daemon read the note).
			w.c.Note(event.MountNote{Time: w.now.Add(10 * time.Second), NS: tc.ns, Detach: true, PID: tc.pid, Mount: mountLine(t, tc.line)})
			readNodeTableTwice(w)
			w.send(umountEv(400, "kubelet", hostNS, "/pods/vol", 0))
			if !tc.leak {
				for _, f := range w.findings {
					t.Errorf("want no finding, got:\n%s", f.Line())
				}
				return
			}
			f := w.only()
			want := fmt.Sprintf("mnt:[%d] /pods/vol, mnt:[%d] /pods/vol", holder, sibling)
			if f.Kind != finding.KindLeak || f.Object.Path != "/pods/vol" || f.Object.Dev != event.MakeDev(0, 40) ||
				strings.Join(holdersOf(f), ", ") != want {
				t.Errorf("want a leak of /pods/vol (0:40) held by %s:\n%s", want, f.Line())
			}
		})
	}
}

// TestUnmountsNotedBeforeTheirEventsPairedInOrder: one process unmounts a
// volume, mounts another filesystem at the same path and unmounts that
// too, and the kernel's three notes come before the tracer's first event
// (the daemon ran that far behind); a second holder copies the other
// filesystem. Each unmount takes the oldest note of its process at its
// path, and takes it whether it needs it or not:
//   - the node's table read again after the notes, neither table shows
//     the path at either unmount: the latest note named the other
//     filesystem for the first unmount (a leak of 0:41 held by the first
//     holder);
//   - read again only after the first unmount, found in the table before
//     the notes, the first unmount left its note, which the second one
//     then took (the first volume's 0:40, held by the second holder at the
//     path, which holds the other filesystem).
func TestUnmountsNotedBeforeTheirEventsPairedInOrder(t *testing.T) {
	const holder, holder2 = 80, 81
	const first = "4 1 0:40 / /pods/vol rw shared:4 - tmpfs vol rw\n"
	const second = "5 1 0:41 / /pods/vol rw shared:5 - tmpfs vol2 rw\n"
	for _, readsFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("node table read before the first unmount %v", readsFirst), func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: -1}, []procfs.Process{proc(1, "systemd", hostNS, "")},
				map[uint32]string{hostNS: hostTable + first})
			w.c.Note(event.MountNote{NS: hostNS, Watch: event.WatchOn})
			w.send(unshareEv(20, "agent", hostNS, holder)) // reads the node's table, with the first volume
			w.proc.procs = append(w.proc.procs, proc(20, "agent", holder, ""))
			w.proc.tables[holder] = noteRoot + "111 110 0:40 / /pods/vol rw - tmpfs vol rw\n"
			w.send(exitEv(21, "true", holder))
			w.proc.tables[hostNS] = hostTable
			for _, n := range []event.MountNote{
				{NS: hostNS, Detach: true, PID: 400, Mount: mountLine(t, first)},
				{NS: hostNS, PID: 400, Mount: mountLine(t, second)},
				{NS: hostNS, Detach: true, PID: 400, Mount: mountLine(t, second)},
			} {
				n.Time = w.now.Add(10 * time.Second) // read after the calls (the events below)
				w.c.Note(n)
			}
			if readsFirst {
				readNodeTableTwice(w)
			}
			w.send(umountEv(400, "kubelet", hostNS, "/pods/vol", 0))
			if !readsFirst {
				readNodeTableTwice(w)
			}
			w.send(mountEv(400, "kubelet", hostNS, "vol2", "/pods/vol", "tmpfs", 0, 0))
			w.send(unshareEv(30, "agent", hostNS, holder2))
			w.proc.procs = append(w.proc.procs, proc(30, "agent", holder2, ""))
			w.proc.tables[holder2] = noteRoot + "121 110 0:41 / /pods/vol rw - tmpfs vol2 rw\n"
			w.send(exitEv(31, "true", holder2))
			w.send(umountEv(400, "kubelet", hostNS, "/pods/vol", 0))
			wantFindingsByDevice(t, w, fmt.Sprintf("leak 0:40 mnt:[%d] /pods/vol", holder), fmt.Sprintf("leak 0:41 mnt:[%d] /pods/vol", holder2))
		})
	}
}

// TestUnmountNoteOfALazyUnmountsSubtreeNotTakenLater: a lazy unmount
// (MNT_DETACH) of /a detaches /a/b too, one note each; the event takes
// /a's. Seconds later the same process mounts another filesystem at /a/b,
// a second holder copies it, and the process unmounts it, its note coming
// before its event and the node's table read again after it. The old
// note of /a/b from the lazy unmount is not this unmount's (a note is
// read after the unmount it tells of, not seconds before): taken, it named
// the first filesystem of /a/b, still copied in the first holder (a leak
// of 0:41 reported there instead of 0:42 in the second holder).
func TestUnmountNoteOfALazyUnmountsSubtreeNotTakenLater(t *testing.T) {
	const holder, holder2 = 80, 81
	const a = "4 1 0:40 / /a rw shared:4 - tmpfs a rw\n"
	const ab = "5 4 0:41 / /a/b rw shared:5 - tmpfs b rw\n"
	const ab2 = "6 1 0:42 / /a/b rw shared:6 - tmpfs b2 rw\n"
	w := newWorldOpts(t, correlate.Options{LeakSettle: -1}, []procfs.Process{proc(1, "systemd", hostNS, "")},
		map[uint32]string{hostNS: hostTable + a + ab})
	w.c.Note(event.MountNote{NS: hostNS, Watch: event.WatchOn})
	w.send(unshareEv(20, "agent", hostNS, holder))
	w.proc.procs = append(w.proc.procs, proc(20, "agent", holder, ""))
	w.proc.tables[holder] = noteRoot + "111 110 0:40 / /a rw - tmpfs a rw\n112 111 0:41 / /a/b rw - tmpfs b rw\n"
	w.send(exitEv(21, "true", holder))
	// umount -l /a: both notes, read a moment after the call.
	w.proc.tables[hostNS] = hostTable
	for _, line := range []string{a, ab} {
		w.c.Note(event.MountNote{Time: w.now.Add(250 * time.Millisecond), NS: hostNS, Detach: true, PID: 400, Mount: mountLine(t, line)})
	}
	lazy := umountEv(400, "kubelet", hostNS, "/a", 0)
	lazy.Flags = unix.MNT_DETACH
	w.send(lazy)
	w.now = w.now.Add(5 * time.Second)
	w.proc.tables[hostNS] = hostTable + ab2
	w.send(mountEv(400, "kubelet", hostNS, "b2", "/a/b", "tmpfs", 0, 0))
	w.send(unshareEv(30, "agent", hostNS, holder2))
	w.proc.procs = append(w.proc.procs, proc(30, "agent", holder2, ""))
	w.proc.tables[holder2] = noteRoot + "121 110 0:42 / /a/b rw - tmpfs b2 rw\n"
	w.send(exitEv(31, "true", holder2))
	// umount /a/b: its note first, the node's table read again after it.
	w.proc.tables[hostNS] = hostTable
	w.c.Note(event.MountNote{Time: w.now.Add(time.Second), NS: hostNS, Detach: true, PID: 400, Mount: mountLine(t, ab2)})
	readNodeTableTwice(w)
	w.send(umountEv(400, "kubelet", hostNS, "/a/b", 0))
	wantFindingsByDevice(t, w, fmt.Sprintf("leak 0:40 mnt:[%d] /a", holder), fmt.Sprintf("leak 0:42 mnt:[%d] /a/b", holder2))
}

// readNodeTableTwice has the node's table read again twice, at the next
// event after each of two propagation changes (which the notes do not
// tell): a table read after notes, and the one before it, both later than
// what the notes told.
func readNodeTableTwice(w *world) {
	for range 2 {
		w.send(mountEv(22, "mount", hostNS, "none", "/tmp", "", unix.MS_SHARED, 0), exitEv(23, "true", hostNS))
	}
}

// wantFindingsByDevice checks w's findings, each as "kind dev holders"
// (holdersOf), in order.
func wantFindingsByDevice(t *testing.T, w *world, want ...string) {
	t.Helper()
	var got []string
	for _, f := range w.findings {
		got = append(got, fmt.Sprintf("%s %s %s", f.Kind, f.Object.Dev, strings.Join(holdersOf(f), ", ")))
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
