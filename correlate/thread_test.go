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

// A process whose one thread enters a namespace (setns from a locked OS
// thread, as mntleak's own nsthread or any Go program reading another
// namespace does) stays where its main thread is: /proc/PID/ns/mnt is the
// main thread's, and the thread ends with its goroutine, with no exit event
// of its own. So the finding on a copy in that namespace names its holder
// and never that process, also when the thread enters while the teardown
// settles and no process list is read again before the leak is reported; a
// single-threaded nsenter (tid == pid) still joins and is named.
func TestThreadSetnsMakesNoMember(t *testing.T) {
	const priv = 95
	for _, tc := range []struct {
		name   string
		tid    int    // the thread that enters
		held   string // the finding's holders, as its line says them
		absent string // never named
	}{
		{"a thread of a multi-threaded process", 61, "held by holder[20] (namespace members", "reader[60]"},
		{"the main thread (nsenter)", 60, "held by reader[60], holder[20] (namespace members", ""},
		// An event that does not say its thread (a hand-made or old one)
		// is taken as the main thread's.
		{"no thread id", 0, "held by reader[60], holder[20] (namespace members", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second},
				[]procfs.Process{proc(1, "systemd", hostNS, ""), proc(60, "reader", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			w.proc.tables[priv] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.send(unshareEv(20, "holder", hostNS, priv))
			w.proc.procs = append(w.proc.procs, proc(20, "holder", priv, ""))
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			// Within the settle window, the thread enters mnt:[95].
			setns := base(event.KindSetns, 60, "reader", priv, 308, 0)
			setns.TID = uint32(tc.tid)
			setns.Flags, setns.FlagNames, setns.MntNSBefore, setns.MntNSAfter = 0x20000, "CLONE_NEWNS", hostNS, priv
			w.send(setns)
			if tc.tid != 61 {
				w.proc.procs[1].MntNS = priv // /proc/60/ns/mnt is the main thread's
			}
			w.now = w.now.Add(3 * time.Second)
			w.send(exitEv(90, "true", hostNS))
			f := w.only()
			line := f.Line()
			t.Log(line)
			if f.Kind != finding.KindLeak || f.Cause != finding.CauseUnshare {
				t.Errorf("%s finding, cause %q: want an unshare leak", f.Kind, f.Cause)
			}
			if !strings.Contains(line, tc.held) {
				t.Errorf("line lacks %q:\n%s", tc.held, line)
			}
			if tc.absent != "" && strings.Contains(line, tc.absent) {
				t.Errorf("%s named, whose thread only entered mnt:[95]:\n%s", tc.absent, line)
			}
			if h, _ := f.Actor(); h == nil || h.MntNS != priv {
				t.Errorf("holder %+v, want mnt:[95]:\n%s", h, line)
			}
		})
	}
}

// The same for a thread that unshares: a Go program that unshares a mount
// namespace from a locked OS thread (to mount in it without touching the
// rest of the process) moves that thread alone; the thread ends with its
// goroutine, and the namespace, that nothing else keeps, with it. The
// process stays where it was. So when a holder of a leaked copy has one of
// its threads unshare while the teardown settles (no process list is read
// again before the leak is reported: its namespace still has another
// member), the finding still names it, and its fix stops it. An unshare by
// the main thread (unshare(1), a single-threaded program) moves the
// process: only the other member is left in the holder namespace.
func TestThreadUnshareMakesNoMember(t *testing.T) {
	const priv, thread = 95, 97
	for _, tc := range []struct {
		name string
		tid  int    // the thread that unshares
		held string // the finding's holders, as its line says them
	}{
		{"a thread of a multi-threaded process", 21, "held by holder[20], worker[22] (namespace members"},
		{"the main thread (unshare)", 20, "held by worker[22] (namespace members"},
		{"no thread id", 0, "held by worker[22] (namespace members"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second},
				[]procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			copied := "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.proc.tables[priv] = copied
			w.send(unshareEv(20, "holder", hostNS, priv))
			w.proc.procs = append(w.proc.procs, proc(20, "holder", priv, ""), proc(22, "worker", priv, ""))
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			// Within the settle window, a thread of the holder unshares.
			unshare := unshareEv(20, "holder", priv, thread)
			unshare.TID = uint32(tc.tid)
			w.send(unshare)
			if tc.tid != 21 {
				w.proc.procs[1].MntNS = thread // /proc/20/ns/mnt is the main thread's
				w.proc.tables[thread] = copied
			}
			// else the thread ended with its goroutine (no exit event),
			// and mnt:[97] with it.
			w.now = w.now.Add(3 * time.Second)
			w.send(exitEv(90, "true", hostNS))
			f := w.only()
			line := f.Line()
			t.Log(line)
			if f.Kind != finding.KindLeak || f.Cause != finding.CauseUnshare {
				t.Errorf("%s finding, cause %q: want an unshare leak", f.Kind, f.Cause)
			}
			if !strings.Contains(line, tc.held) {
				t.Errorf("line lacks %q:\n%s", tc.held, line)
			}
			if h, _ := f.Actor(); h == nil || h.MntNS != priv {
				t.Errorf("holder %+v, want mnt:[95]:\n%s", h, line)
			}
		})
	}
}

// A namespace a thread unshared and stays in (a Go program's locked OS
// thread) is kept by that thread alone: /proc/PID/ns/mnt is its main
// thread's, /proc/PID/task/TID/ns/mnt the thread's (procfs lists it in
// Process.Threads). When the host unmounts a volume that namespace
// copied, the leak names the namespace, the process and its thread, and a
// fix that enters the namespace through the thread (nsenter -t TID -m);
// its table is read through the thread. A control: the same thread gone
// before the unmount (its goroutine ended) leaves no holder and no leak.
func TestNamespaceKeptByAThread(t *testing.T) {
	const priv = 97
	for _, tc := range []struct {
		name   string
		stays  bool
		wantNo bool
	}{
		{"the thread stays", true, false},
		{"the thread ended", false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := threadKeptWorld(t, priv)
			if !tc.stays {
				w.proc.procs[1].Threads = nil
			}
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			w.now = w.now.Add(3 * time.Second)
			w.send(exitEv(90, "true", hostNS))
			if tc.wantNo {
				w.c.Flush()
				for _, f := range w.findings {
					t.Errorf("want no finding: %s", f.Line())
				}
				return
			}
			f := w.only()
			line := f.Line()
			t.Log(line)
			if f.Kind != finding.KindLeak || f.Cause != finding.CauseUnshare {
				t.Errorf("%s finding, cause %q: want an unshare leak", f.Kind, f.Cause)
			}
			h, a := f.Actor()
			if h == nil || h.MntNS != priv || a == nil || a.PID != 60 || a.TID != 61 || a.Role != finding.RoleMember {
				t.Errorf("holder %+v actor %+v, want prog[60] thread 61, a member of mnt:[97]:\n%s", h, a, line)
			}
			for _, want := range []string{"held by prog[60] thread 61 (namespace members", "created by prog[60] thread 61 (unshare)"} {
				if !strings.Contains(line, want) {
					t.Errorf("line lacks %q:\n%s", want, line)
				}
			}
			if want := "nsenter -t 61 -m umount /srv/vol"; !strings.Contains(f.Fix, want) {
				t.Errorf("fix lacks %q: %s", want, f.Fix)
			}
		})
	}
}

// A holder whose main thread unshares again after the unmount (exec
// unshare: the same pid, a new namespace copied from the one it left, the
// leaked copy included) leaves its first namespace with no process; the
// leak names the namespace that holds the copy now, the new one, with the
// unshare that made it, whether that unshare comes within the settle
// window or is itself the first event after it (the settle then runs with
// a process list that already shows the holder in the new namespace).
// Its cause stays unshare, not private-parent: no propagation could have
// reached a copy taken after the unmount.
func TestHolderMovedAfterTheUnmount(t *testing.T) {
	const first, moved = 95, 96
	for _, tc := range []struct {
		name  string
		after time.Duration // from the unmount to the holder's unshare
	}{
		{"within the settle window", 500 * time.Millisecond},
		{"as the first event after it", 2500 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second},
				[]procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			copied := "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.proc.tables[first] = copied
			w.send(unshareEv(20, "holder", hostNS, first))
			w.proc.procs = append(w.proc.procs, proc(20, "holder", first, ""))
			// unshare(1) makes the new namespace's root private: the
			// parent of the copy mnt:[96] takes is private in mnt:[95].
			w.send(mountEv(20, "unshare", first, "none", "/", "", unix.MS_REC|unix.MS_PRIVATE, 0))
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			w.now = w.now.Add(tc.after)
			w.proc.procs[1].MntNS = moved
			w.proc.tables[moved] = copied
			w.send(unshareEv(20, "holder", first, moved))
			w.now = w.now.Add(3 * time.Second)
			w.send(exitEv(90, "true", hostNS))
			w.c.Flush()
			f := w.only()
			line := f.Line()
			t.Log(line)
			if f.Kind != finding.KindLeak || f.Cause != finding.CauseUnshare {
				t.Errorf("%s finding, cause %q: want an unshare leak", f.Kind, f.Cause)
			}
			if h, a := f.Actor(); h == nil || h.MntNS != moved || a == nil || a.PID != 20 || len(f.Holders) != 1 {
				t.Errorf("holders %+v, want holder[20] in mnt:[96] alone:\n%s", f.Holders, line)
			}
			if !strings.Contains(line, "mnt:[96] was created by holder[20] (unshare, after the unmount, copying the copy mnt:[95] had kept)") {
				t.Errorf("the summary does not say mnt:[96] copied mnt:[95]'s leaked copy:\n%s", line)
			}
		})
	}
}
