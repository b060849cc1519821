package correlate_test

import (
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"

	"github.com/mntleak/mntleak/finding"
)

// TestLostEvidence: a finding whose evidence window overlaps a loss says
// its evidence may be incomplete; a loss outside the window leaves it alone.
func TestLostEvidence(t *testing.T) {
	lost := func(w *world, n uint64) {
		ev := base(event.KindLost, 0, "", 0, -1, 0)
		ev.Lost, ev.LostSince = n, w.now.Add(50*time.Millisecond)
		w.send(ev)
	}
	// privateTmp: ntpd's PrivateTmp namespace copies /srv/vol; kubelet then
	// unmounts it on the host (a leak finding citing the unshare).
	privateTmp := func(w *world, between func()) {
		w.send(unshareEv(300, "(ntpd)", hostNS, 20))
		w.proc.procs = append(w.proc.procs, proc(300, "ntpd", 20, "/system.slice/ntpd.service"))
		w.proc.tables[20] = "70 69 254:0 / / rw master:1 - ext4 /dev/vda rw\n" +
			"71 70 254:0 /tmp/systemd-private-0123456789abcdef0123456789abcdef-ntpd.service-AbCdEf/tmp /tmp rw - ext4 /dev/vda rw\n" +
			"72 70 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
		w.send(exitEv(301, "true", 20))
		between()
		w.proc.tables[hostNS] = hostWithoutVol
		w.send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0))
	}
	tests := []struct {
		name       string
		run        func(w *world)
		incomplete uint64 // 0: the finding must not say so
	}{
		{"no loss", func(w *world) { privateTmp(w, func() {}) }, 0},
		{"loss before the namespace was created", func(w *world) {
			lost(w, 7)
			w.send(exitEv(302, "true", hostNS), exitEv(303, "true", hostNS))
			privateTmp(w, func() {})
		}, 0},
		{"loss between the creation and the unmount", func(w *world) {
			privateTmp(w, func() { lost(w, 12) })
		}, 12},
		{"losses add up", func(w *world) {
			privateTmp(w, func() { lost(w, 3); lost(w, 4) })
		}, 7},
		{"a loss noticed after the finding", func(w *world) {
			privateTmp(w, func() {})
			lost(w, 5)
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "/init.scope")}, map[uint32]string{hostNS: hostTable})
			tt.run(w)
			f := w.only()
			if f.Cause != finding.CausePrivateTmp {
				t.Fatalf("cause %s, want private-tmp: %s", f.Cause, f.Line())
			}
			switch {
			case tt.incomplete == 0 && f.Incomplete != nil:
				t.Errorf("finding marked incomplete (%+v): %s", f.Incomplete, f.Line())
			case tt.incomplete != 0 && (f.Incomplete == nil || f.Incomplete.Lost != tt.incomplete):
				t.Errorf("Incomplete = %+v, want %d lost: %s", f.Incomplete, tt.incomplete, f.Line())
			case tt.incomplete != 0 && !strings.Contains(f.Line(), "evidence may be incomplete"):
				t.Errorf("line does not say the evidence may be incomplete: %s", f.Line())
			}
		})
	}
}
