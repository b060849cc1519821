package correlate_test

import (
	"bytes"
	"encoding/json"
	"fmt"
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

func (r *readCounter) Mountinfo(pid int) (uint32, []*procfs.Mount, error) {
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
