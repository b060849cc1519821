package correlate_test

import (
	"strings"
	"testing"
	"time"

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
