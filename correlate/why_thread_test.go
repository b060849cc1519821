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

// `mntleak why` on a device held only by a namespace a thread keeps (a
// non-main thread that unshared and stays; its process runs in the host's
// namespace) names the process for its thread, prog[PID] thread TID, as
// the leak finding does, and a fix that enters through the thread: both
// when the daemon saw the thread's unshare and from /proc alone.
func TestWhyNamesTheThreadHolder(t *testing.T) {
	const priv = 97
	for _, seen := range []bool{true, false} {
		name := "from /proc alone"
		if seen {
			name = "the unshare seen"
		}
		t.Run(name, func(t *testing.T) {
			prog := proc(60, "prog", hostNS, "")
			prog.Threads = []procfs.Thread{{TID: 61, MntNS: priv}}
			fp := &fakeProc{host: hostNS, procs: []procfs.Process{proc(1, "systemd", hostNS, ""), prog},
				tables: map[uint32]string{hostNS: hostWithoutVol, priv: "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"}}
			c := correlate.New(fp, correlate.Options{}, func(*finding.Finding) {})
			at := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
			if seen {
				// The daemon's ledger, as why reads it before the snapshot.
				unshare := unshareEv(60, "prog", hostNS, priv)
				unshare.TID = 61
				unshare.Time, unshare.MonoNS = at, uint64(at.UnixNano())
				c.Remember(unshare)
			}
			if err := c.Start(); err != nil {
				t.Fatal(err)
			}
			f := c.Why(correlate.Target{Path: "/dev/loop0", Dev: event.MakeDev(7, 0)}, at.Add(time.Hour))
			if f == nil {
				t.Fatal("nothing holds /dev/loop0, want mnt:[97] kept by prog[60] thread 61")
			}
			line := f.Line()
			t.Log(line)
			if f.Kind != finding.KindHeld || len(f.Holders) != 1 || f.Holders[0].MntNS != priv {
				t.Errorf("%s finding, holders %+v: want held in mnt:[97] alone", f.Kind, f.Holders)
			}
			if h, a := f.Actor(); h == nil || a == nil || a.PID != 60 || a.TID != 61 || a.Role != finding.RoleMember {
				t.Errorf("actor %+v, want prog[60] thread 61, a member of mnt:[97]:\n%s", a, line)
			}
			if want := "prog[60] thread 61"; !strings.Contains(line, want) {
				t.Errorf("line lacks %q:\n%s", want, line)
			}
			if want := "held by prog[60] thread 61 (namespace member)"; !strings.Contains(f.Report(), want) {
				t.Errorf("why's report lacks %q:\n%s", want, f.Report())
			}
			if want := "nsenter -t 61 -m umount /srv/vol"; !strings.Contains(f.Fix, want) {
				t.Errorf("fix lacks %q: %s", want, f.Fix)
			}
		})
	}
}
