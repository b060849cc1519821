package correlate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
	"github.com/mntleak/mntleak/stream"
)

// Two holders of the node's /srv/vol (private copies, taken before the
// node unmounted it), the second one also bound it to /data of its own.
const (
	noteHolderA = 80
	noteHolderB = 81
	noteRoot    = "110 109 254:0 / / rw - ext4 /dev/vda rw\n"
	noteCopyA   = "111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	noteCopyB   = "121 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	noteBindB   = "122 110 7:0 / /data rw - ext4 /dev/loop0 rw\n"
)

// noteWorld is the node after the unmount of /srv/vol: both holders'
// tables were read with their copies (the leak is reported: LeakSettle as
// given), then the node removed the directory, which detached both copies
// at /srv/vol; no event tells it, and the holders' tables are not read
// again (nothing made them stale). notes: the daemon's watch told the
// correlator (the kernel's notes, the mount ids mountinfo gives).
func noteWorld(t *testing.T, settle time.Duration, notes bool) *world {
	t.Helper()
	w := newWorldOpts(t, correlate.Options{LeakSettle: settle}, []procfs.Process{proc(1, "systemd", hostNS, "")},
		map[uint32]string{hostNS: hostTable})
	note := w.c.Note
	if !notes {
		note = nil
	}
	noteScenario(t, w, w.send, note)
	return w
}

// noteScenario plays noteWorld's story on w: send delivers events, note
// (nil: no watch) the kernel's notes.
func noteScenario(t *testing.T, w *world, send func(...*event.Event), note func(event.MountNote)) {
	t.Helper()
	send(unshareEv(20, "agent", hostNS, noteHolderA), unshareEv(30, "agent", hostNS, noteHolderB))
	w.proc.procs = append(w.proc.procs, proc(20, "agent", noteHolderA, ""), proc(30, "agent", noteHolderB, ""))
	w.proc.tables[noteHolderA] = noteRoot + noteCopyA
	w.proc.tables[noteHolderB] = noteRoot + noteCopyB
	send(mountEv(30, "agent", noteHolderB, "/srv/vol", "/data", "", 0x1000, 0)) // MS_BIND
	w.proc.tables[noteHolderB] = noteRoot + noteCopyB + noteBindB
	send(exitEv(21, "true", noteHolderA), exitEv(31, "true", noteHolderB)) // both tables are read
	w.proc.tables[hostNS] = hostWithoutVol
	send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0))
	// The node's rmdir /srv/vol: both copies there are detached.
	w.proc.tables[noteHolderA] = noteRoot
	w.proc.tables[noteHolderB] = noteRoot + noteBindB
	if note != nil {
		for _, n := range []struct {
			ns   uint32
			line string
		}{{noteHolderA, noteCopyA}, {noteHolderB, noteCopyB}} {
			note(event.MountNote{Time: w.now, NS: n.ns, Detach: true, PID: 400, Mount: mountLine(t, n.line)})
		}
	}
	send(exitEv(91, "true", hostNS)) // the node's table is read again (its unmount has settled); no holder's is
}

// mountLine is one mountinfo line's entry.
func mountLine(t *testing.T, line string) *mountinfo.Info {
	t.Helper()
	ms, err := mountinfo.GetMountsFromReader(strings.NewReader(line), nil)
	if err != nil || len(ms) != 1 {
		t.Fatalf("mountinfo %q: %v", line, err)
	}
	return ms[0]
}

// holdersOf is a finding's holders as "mnt:[NS] where", in order, with
// " kept by ..." after one that something beside its processes keeps.
func holdersOf(f *finding.Finding) []string {
	var out []string
	for _, h := range f.Holders {
		s := fmt.Sprintf("mnt:[%d] %s", h.MntNS, h.Where)
		if h.KeptBy != "" {
			s += " kept by " + h.KeptBy
		}
		out = append(out, s)
	}
	return out
}

// TestMountNoteDetachedCopyIsNoHolder: `why` asked about the device right
// after the node's rmdir detached the first holder's copy. No event came
// since both tables were read, so both are fresh and neither is read
// again: without the kernel's note the first holder is named for a copy
// it no longer has (the oracle is the kernel's table, the fake /proc's);
// with it, only the second holder's bind at /data holds the device.
func TestMountNoteDetachedCopyIsNoHolder(t *testing.T) {
	for _, notes := range []bool{true, false} {
		t.Run(fmt.Sprintf("notes=%v", notes), func(t *testing.T) {
			w := noteWorld(t, -1, notes)
			f := w.c.Why(correlate.Target{Path: "/dev/loop0", Dev: event.MakeDev(7, 0)}, w.now.Add(time.Millisecond))
			if f == nil {
				t.Fatal("nothing holds /dev/loop0; the second holder's bind at /data does")
			}
			got := strings.Join(holdersOf(f), ", ")
			want := fmt.Sprintf("mnt:[%d] /data", noteHolderB)
			if !notes {
				// Today's fallback (no fanotify marks, a replay of a recording
				// without notes): the answer depends on when a table was read
				// again; here none was, and both copies at /srv/vol the
				// kernel detached are named.
				want = fmt.Sprintf("mnt:[%d] /srv/vol, mnt:[%d] /srv/vol", noteHolderA, noteHolderB)
			}
			if got != want {
				t.Errorf("holders %s, want %s (the kernel's tables: %q, %q)\n%s", got, want,
					w.proc.tables[noteHolderA], w.proc.tables[noteHolderB], f.Line())
			}
		})
	}
}

// TestMountNoteSameLeakWithAndWithout: where the settle reads the holders'
// tables again (a leak waits LeakSettle), the notes change nothing: the
// same finding, byte for byte, with the watch on and off.
func TestMountNoteSameLeakWithAndWithout(t *testing.T) {
	var lines []string
	for _, notes := range []bool{true, false} {
		w := noteWorld(t, 2*time.Second, notes)
		w.now = w.now.Add(2 * time.Second)
		w.send(exitEv(90, "true", hostNS)) // past the deadline: the leak settles
		f := w.only()
		if got, want := strings.Join(holdersOf(f), ", "), fmt.Sprintf("mnt:[%d] /data", noteHolderB); f.Kind != finding.KindLeak || got != want {
			t.Fatalf("notes=%v: holders %s, want a leak held by %s:\n%s", notes, got, want, f.Line())
		}
		lines = append(lines, f.Line())
	}
	if lines[0] != lines[1] {
		t.Errorf("the notes changed the finding:\n on: %s\noff: %s", lines[0], lines[1])
	}
}

// TestMountNoteReplays: a recording made with the watch on has the notes
// as lines of their own, before the event the daemon handled after
// reading them; it replays to the live findings, byte for byte, and with
// its note lines taken out to the findings of a live run without the
// watch (a recording made before the notes existed is such a one: no
// golden changes).
func TestMountNoteReplays(t *testing.T) {
	live := func(notes bool) (findings []string, rec []byte) {
		var buf bytes.Buffer
		line := func(v any) {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			buf.Write(append(b, '\n'))
		}
		w := &world{t: t, now: time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)}
		w.proc = &fakeProc{procs: []procfs.Process{proc(1, "systemd", hostNS, "")}, tables: map[uint32]string{hostNS: hostTable},
			host: hostNS, blocks: map[string]event.Dev{"/dev/loop0": event.MakeDev(7, 0)}}
		w.c = correlate.New(procfs.Recorder{Proc: w.proc, Write: func(r *procfs.Record) { line(stream.ProcLine{Proc: r}) }},
			correlate.Options{}, func(f *finding.Finding) { w.findings = append(w.findings, f) })
		if err := w.c.Start(); err != nil {
			t.Fatal(err)
		}
		send := func(evs ...*event.Event) {
			for _, ev := range evs {
				w.now = w.now.Add(200 * time.Millisecond)
				ev.Time, ev.MonoNS = w.now, uint64(w.now.UnixNano())
				line(ev)
				w.c.Handle(ev)
			}
		}
		var note func(event.MountNote)
		if notes {
			note = func(n event.MountNote) {
				line(stream.NoteLine{Note: &n})
				w.c.Note(n)
			}
		}
		noteScenario(t, w, send, note)
		send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
		w.c.Flush()
		for _, f := range w.findings {
			findings = append(findings, f.Line())
		}
		return findings, buf.Bytes()
	}
	replay := func(rec []byte) []string {
		var out []string
		if err := correlate.Replay(bytes.NewReader(rec), "rec", func(f *finding.Finding) { out = append(out, f.Line()) }); err != nil {
			t.Fatal(err)
		}
		return out
	}
	on, rec := live(true)
	off, _ := live(false)
	if len(on) == 0 || !strings.Contains(string(rec), `"mount_note"`) {
		t.Fatalf("no finding, or no note recorded: %d findings", len(on))
	}
	if got := replay(rec); strings.Join(got, "\n") != strings.Join(on, "\n") {
		t.Errorf("the replay differs from the live run:\nreplay: %q\n  live: %q", got, on)
	}
	var without []string
	for _, l := range strings.Split(strings.TrimSuffix(string(rec), "\n"), "\n") {
		if !strings.HasPrefix(l, `{"mount_note"`) {
			without = append(without, l)
		}
	}
	if got := replay([]byte(strings.Join(without, "\n") + "\n")); strings.Join(got, "\n") != strings.Join(off, "\n") {
		t.Errorf("without its notes the recording does not replay as a run without the watch:\nreplay: %q\n   off: %q", got, off)
	}
}

// TestDetachedLeakDroppedUnlessATableCouldNotBeRead: the node unmounted
// /srv/vol and mnt:[80] kept a copy (a pending leak); a note says the copy
// was detached since. At the next event the leak is dropped at once when
// mnt:[80]'s table, read again, has no copy; when it cannot be read, what
// holds the copy is not known, and the leak waits for its deadline.
func TestDetachedLeakDroppedUnlessATableCouldNotBeRead(t *testing.T) {
	for _, tc := range []struct {
		name  string
		after string // mnt:[80]'s table after the detach
		want  int    // pending leaks after the next event
	}{
		{"read again", noteRoot, 0},
		{"unreadable", "not a mountinfo line\n", 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second},
				[]procfs.Process{proc(1, "systemd", hostNS, ""), proc(20, "keeper", noteHolderA, "")},
				map[uint32]string{hostNS: hostTable, noteHolderA: noteRoot + noteCopyA})
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			if n := w.c.PendingLeaks(); n != 1 {
				t.Fatalf("%d pending leaks after the unmount, want 1", n)
			}
			w.proc.tables[noteHolderA] = tc.after
			w.c.Note(event.MountNote{Time: w.now, NS: noteHolderA, Detach: true, PID: 40, Mount: mountLine(t, noteCopyA)})
			w.send(exitEv(91, "true", hostNS))
			if n := w.c.PendingLeaks(); n != tc.want || len(w.findings) != 0 {
				t.Errorf("%d pending leaks and %d findings after the detach, want %d and none", n, len(w.findings), tc.want)
			}
		})
	}
}

// readCounter is a fake /proc that counts the mount tables read, by
// namespace.
type readCounter struct {
	*fakeProc
	reads map[uint32]int
}

func (r *readCounter) Mountinfo(pid int) (uint32, []*mountinfo.Info, error) {
	ns, mounts, err := r.fakeProc.Mountinfo(pid)
	r.reads[ns]++
	return ns, mounts, err
}

// TestFailureTrustsATableTheNotesKeepTrue: two holders' tables were read
// while the daemon read their namespaces' notes; the node's rmdir then
// detached both copies at /srv/vol, and the notes told it. A failure on
// the device reads neither table again (the notes made them true: the
// second holder's bind at /data alone holds it), where without the watch
// it reads both again to the same finding.
func TestFailureTrustsATableTheNotesKeepTrue(t *testing.T) {
	var lines []string
	for _, watch := range []bool{true, false} {
		var counter *readCounter
		w := newWorldOf(t, correlate.Options{}, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable},
			func(f *fakeProc) procfs.Proc {
				counter = &readCounter{fakeProc: f, reads: map[uint32]int{}}
				return counter
			})
		w.send(unshareEv(20, "agent", hostNS, noteHolderA), unshareEv(30, "agent", hostNS, noteHolderB))
		if watch {
			w.c.Note(event.MountNote{NS: noteHolderA, Watch: event.WatchOn})
			w.c.Note(event.MountNote{NS: noteHolderB, Watch: event.WatchOn})
		}
		w.proc.procs = append(w.proc.procs, proc(20, "agent", noteHolderA, ""), proc(30, "agent", noteHolderB, ""))
		w.proc.tables[noteHolderA] = noteRoot + noteCopyA
		w.proc.tables[noteHolderB] = noteRoot + noteCopyB + noteBindB
		w.send(exitEv(21, "true", noteHolderA), exitEv(31, "true", noteHolderB)) // both tables are read
		w.proc.tables[hostNS] = hostWithoutVol
		w.send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0)) // the leak
		w.proc.tables[noteHolderA] = noteRoot
		w.proc.tables[noteHolderB] = noteRoot + noteBindB
		w.c.Note(event.MountNote{Time: w.now, NS: noteHolderA, Detach: true, PID: 400, Mount: mountLine(t, noteCopyA)})
		w.c.Note(event.MountNote{Time: w.now, NS: noteHolderB, Detach: true, PID: 400, Mount: mountLine(t, noteCopyB)})
		clear(counter.reads)
		w.findings = nil
		w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
		f := w.only()
		if got, want := strings.Join(holdersOf(f), ", "), fmt.Sprintf("mnt:[%d] /data", noteHolderB); got != want {
			t.Errorf("watch=%v: holders %s, want %s:\n%s", watch, got, want, f.Line())
		}
		reads := counter.reads[noteHolderA] + counter.reads[noteHolderB]
		if watch && reads != 0 || !watch && reads == 0 {
			t.Errorf("watch=%v: the holders' tables read %d times by the failure, want %s", watch, reads, map[bool]string{true: "none", false: "again"}[watch])
		}
		lines = append(lines, f.Line())
	}
	if lines[0] != lines[1] {
		t.Errorf("the finding differs with the watch:\n on: %s\noff: %s", lines[0], lines[1])
	}
}

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
			// Propagation changes the notes do not tell: the node's table is
			// read again at the next event, twice.
			for range 2 {
				w.send(mountEv(22, "mount", hostNS, "none", "/tmp", "", unix.MS_SHARED, 0), exitEv(23, "true", hostNS))
			}
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
			readTwice := func() {
				for range 2 {
					w.send(mountEv(22, "mount", hostNS, "none", "/tmp", "", unix.MS_SHARED, 0), exitEv(23, "true", hostNS))
				}
			}
			if readsFirst {
				readTwice()
			}
			w.send(umountEv(400, "kubelet", hostNS, "/pods/vol", 0))
			if !readsFirst {
				readTwice()
			}
			w.send(mountEv(400, "kubelet", hostNS, "vol2", "/pods/vol", "tmpfs", 0, 0))
			w.send(unshareEv(30, "agent", hostNS, holder2))
			w.proc.procs = append(w.proc.procs, proc(30, "agent", holder2, ""))
			w.proc.tables[holder2] = noteRoot + "121 110 0:41 / /pods/vol rw - tmpfs vol2 rw\n"
			w.send(exitEv(31, "true", holder2))
			w.send(umountEv(400, "kubelet", hostNS, "/pods/vol", 0))
			var got []string
			for _, f := range w.findings {
				got = append(got, fmt.Sprintf("%s %s %s", f.Kind, f.Object.Dev, strings.Join(holdersOf(f), ", ")))
			}
			want := []string{fmt.Sprintf("leak 0:40 mnt:[%d] /pods/vol", holder), fmt.Sprintf("leak 0:41 mnt:[%d] /pods/vol", holder2)}
			if !slices.Equal(got, want) {
				t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
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
	for range 2 {
		w.send(mountEv(22, "mount", hostNS, "none", "/tmp", "", unix.MS_SHARED, 0), exitEv(23, "true", hostNS))
	}
	w.send(umountEv(400, "kubelet", hostNS, "/a/b", 0))
	var got []string
	for _, f := range w.findings {
		got = append(got, fmt.Sprintf("%s %s %s", f.Kind, f.Object.Dev, strings.Join(holdersOf(f), ", ")))
	}
	want := []string{fmt.Sprintf("leak 0:40 mnt:[%d] /a", holder), fmt.Sprintf("leak 0:42 mnt:[%d] /a/b", holder2)}
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
