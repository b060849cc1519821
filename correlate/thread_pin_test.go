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

// threadKeptWorld is prog[60] whose thread 61 unshared namespace priv,
// where /srv/vol (loop0) is mounted, with its process's main thread in
// the host's namespace.
func threadKeptWorld(t *testing.T, priv uint32) *world {
	t.Helper()
	w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second},
		[]procfs.Process{proc(1, "systemd", hostNS, ""), proc(60, "prog", hostNS, "")}, map[uint32]string{hostNS: hostTable})
	w.proc.tables[priv] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	unshare := unshareEv(60, "prog", hostNS, priv)
	unshare.TID = 61
	w.send(unshare)
	w.proc.procs[1].Threads = []procfs.Thread{{TID: 61, MntNS: priv}}
	return w
}

// A thread that unshared (a filesystem context and a mount namespace of
// its own) and went into its copy of /srv/vol (chdir, or chroot) pins that
// copy by its own cwd or root, /proc/PID/task/TID/cwd: its process's main
// thread runs in the host's namespace with a cwd elsewhere. When the host
// unmounts /srv/vol, the leak names the thread's pin in the thread's
// namespace, prog[60] thread 61 cwd /srv/vol, as it names a process's
// (release refuses a copy a process works in), never a cwd of prog[60]
// in the host's namespace, which has no /srv/vol.
func TestThreadPinsItsCopy(t *testing.T) {
	const priv = 97
	for _, kind := range []procfs.PinKind{procfs.PinCwd, procfs.PinRoot} {
		t.Run(string(kind), func(t *testing.T) {
			w := threadKeptWorld(t, priv)
			w.proc.pins = []procfs.Pin{{Process: w.proc.procs[1], Kind: kind, Dev: event.MakeDev(7, 0), Path: "/srv/vol", TID: 61}}
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			w.now = w.now.Add(3 * time.Second)
			w.send(exitEv(90, "true", hostNS))
			f := w.only()
			line := f.Line()
			t.Log(line)
			if f.Kind != finding.KindLeak || len(f.Holders) != 1 || f.Holders[0].MntNS != priv {
				t.Fatalf("%s finding, %d holders: want a leak held in mnt:[97] alone:\n%s", f.Kind, len(f.Holders), line)
			}
			pins := f.Holders[0].Pins
			if len(pins) != 1 || pins[0].PID != 60 || pins[0].TID != 61 || pins[0].Pin != string(kind) || pins[0].MntNS != priv {
				t.Errorf("pins %+v, want prog[60] thread 61's %s in mnt:[97]:\n%s", pins, kind, line)
			}
			if want := "held by prog[60] thread 61 " + string(kind) + " /srv/vol"; !strings.Contains(line, want) {
				t.Errorf("line lacks %q:\n%s", want, line)
			}
			if want := "prog[60] thread 61: " + string(kind) + " /srv/vol"; !strings.Contains(f.Report(), want) {
				t.Errorf("report lacks %q:\n%s", want, f.Report())
			}
		})
	}
}
