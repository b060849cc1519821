package correlate_test

import (
	"testing"

	"github.com/mntleak/mntleak/procfs"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
)

// TestVanishedCopy: a namespace's private copy is gone from its table by
// the time the node unmounts the original. Either the kernel detached it
// (the runtime removed the mountpoint: a leak all the same, named as
// detached), or the namespace unmounted its copy itself after its table
// was read (no leak). Only a successful unmount, by that namespace, of
// that path, tells the two apart: one that failed, one of another path,
// and the node's own unmount of the original do not. (The holder also
// mounts something of its own meanwhile, so its table is read again at
// the node's unmount: a table nothing changed is not.)
func TestVanishedCopy(t *testing.T) {
	const holderNS = 80
	holderRoot := "110 109 254:0 / / rw - ext4 /dev/vda rw\n"
	holderCopy := holderRoot + "111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	tests := []struct {
		name   string
		before func(w *world) // what the holder did after its table was read
		leak   bool
	}{
		{"detached by the kernel", func(w *world) {}, true},
		{"unmounted by its namespace", func(w *world) {
			w.send(umountEv(20, "agent", holderNS, "/srv/vol", 0))
		}, false},
		{"its namespace's unmount of it failed", func(w *world) {
			w.send(umountEv(20, "agent", holderNS, "/srv/vol", -int64(unix.EINVAL)))
		}, true},
		{"its namespace unmounted another path", func(w *world) {
			w.send(umountEv(20, "agent", holderNS, "/srv/other", 0))
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			w.send(mountEv(400, "kubelet", hostNS, "/dev/loop0", "/srv/vol", "ext4", 0, 0))
			w.send(unshareEv(20, "agent", hostNS, holderNS))
			w.proc.procs = append(w.proc.procs, proc(20, "agent", holderNS, ""))
			w.proc.tables[holderNS] = holderCopy
			w.send(exitEv(21, "true", holderNS)) // the holder's table is read, with the copy
			// The copy goes (how: tt.before), no table is read meanwhile.
			w.proc.tables[holderNS] = holderRoot + "112 110 0:60 / /run/agent rw - tmpfs tmpfs rw\n"
			w.send(mountEv(20, "agent", holderNS, "tmpfs", "/run/agent", "tmpfs", 0, 0))
			tt.before(w)
			w.findings = nil
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0))
			if !tt.leak {
				if len(w.findings) != 0 {
					t.Fatalf("a copy its namespace unmounted is reported: %s", w.findings[0].Line())
				}
				return
			}
			f := w.only()
			if f.Kind != finding.KindLeak || f.Object.Path != "/srv/vol" || len(f.Holders) != 1 {
				t.Fatalf("want one leak of /srv/vol with one holder: %s", f.Line())
			}
			if h := f.Holders[0]; h.MntNS != holderNS || h.Where != "/srv/vol" || !h.Detached {
				t.Errorf("holder %+v, want the copy at /srv/vol in mnt:[%d], detached: %s", h, holderNS, f.Line())
			}
		})
	}
}
