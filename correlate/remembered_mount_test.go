package correlate_test

import (
	"testing"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// TestLeakOfAMountFromBeforeARestart: mntleak restarted (with its state
// directory) after the node mounted /srv/vol, and a namespace it never saw
// made keeps a private copy. A namespace that predates this run can only
// have copied a mount this run saw made through propagation, which also
// carries the unmount; but a mount remembered from the earlier run may be
// older than the namespace (made while mntleak was down), so its copy is
// searched for and the leak found, also when that mount is the last
// event remembered.
func TestLeakOfAMountFromBeforeARestart(t *testing.T) {
	const holderNS = 70
	tests := []struct {
		name  string
		after bool // another event was remembered after the mount
	}{
		{"the mount is the last event remembered", false},
		{"events were remembered after the mount", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			remembered := []*event.Event{mountEv(400, "kubelet", hostNS, "/dev/loop0", "/srv/vol", "ext4", 0, 0)}
			if tt.after {
				remembered = append(remembered, mountEv(400, "kubelet", hostNS, "tmpfs", "/srv/scratch", "tmpfs", 0, 0))
			}
			first.send(remembered...)

			// mntleak restarts: the remembered events, then a snapshot that
			// finds mnt:[70], made while mntleak was down, with its copy.
			w := &world{t: t, now: first.now, proc: first.proc}
			w.proc.procs = append(w.proc.procs, proc(700, "agent", holderNS, ""))
			w.proc.tables[holderNS] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.c = correlate.New(w.proc, correlate.Options{LeakSettle: -1}, func(f *finding.Finding) { w.findings = append(w.findings, f) })
			for _, ev := range remembered {
				w.c.Remember(ev)
			}
			if err := w.c.Start(); err != nil {
				t.Fatal(err)
			}
			w.send(exitEv(701, "true", hostNS))
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0))
			f := w.only()
			if f.Kind != finding.KindLeak || f.Object.Path != "/srv/vol" || len(f.Holders) != 1 {
				t.Fatalf("want one leak of /srv/vol with one holder: %s", f.Line())
			}
			if h := f.Holders[0]; h.MntNS != holderNS || h.Where != "/srv/vol" {
				t.Errorf("holder %+v, want the copy at /srv/vol in mnt:[%d]: %s", h, holderNS, f.Line())
			}
		})
	}
}
