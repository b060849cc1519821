package correlate_test

import (
	"testing"
	"time"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/procfs"
)

// TestOpenLeaksCountsHeldLeaks: OpenLeaks (the daemon's open-leaks gauge)
// counts a leak while its holder namespace lives, once however many
// copies it keeps, and no longer once the namespace is gone.
func TestOpenLeaksCountsHeldLeaks(t *testing.T) {
	const holderNS = 80
	w := newWorldOpts(t, correlate.Options{GCInterval: time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
		map[uint32]string{hostNS: hostTable})
	w.send(mountEv(400, "kubelet", hostNS, "/dev/loop0", "/srv/vol", "ext4", 0, 0))
	w.send(unshareEv(20, "agent", hostNS, holderNS))
	w.proc.procs = append(w.proc.procs, proc(20, "agent", holderNS, ""))
	w.proc.tables[holderNS] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n" +
		"112 110 7:0 / /srv/vol2 rw - ext4 /dev/loop0 rw\n"
	w.send(exitEv(21, "true", hostNS))
	if n := w.c.OpenLeaks(); n != 0 {
		t.Fatalf("%d open leaks before any unmount", n)
	}
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0))
	w.only()
	if n := w.c.OpenLeaks(); n != 1 {
		t.Fatalf("%d open leaks, want 1 while mnt:[%d] keeps its copies", n, holderNS)
	}
	// The holder's last process exits: the namespace and its copies go
	// (retired at the next collection, once /proc confirms it).
	w.proc.procs = w.proc.procs[:1]
	w.send(exitEv(20, "agent", holderNS))
	w.now = w.now.Add(2 * time.Second)
	w.send(exitEv(22, "true", hostNS))
	if n := w.c.Lineage().Get(holderNS); n != nil && !n.Dead {
		t.Fatalf("mnt:[%d] still live after its last process exited", holderNS)
	}
	if n := w.c.OpenLeaks(); n != 0 {
		t.Errorf("%d open leaks, want 0 once mnt:[%d] is gone", n, holderNS)
	}
}
