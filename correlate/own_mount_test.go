package correlate_test

import (
	"testing"

	"github.com/mntleak/mntleak/procfs"
)

// TestOlderNamespaceMountOfItsOwn: a namespace made before tracing began
// (so before the mount tracing saw) has the same device mounted at the
// same path, not as a copy of the node's mount (a namespace that old can
// only have received that by propagation, which also carries the
// unmount). The node's unmount leaves it mounted there: that is no leak
// of the unmount, and no finding.
func TestOlderNamespaceMountOfItsOwn(t *testing.T) {
	const olderNS = 30
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(50, "backup", olderNS, "")},
		map[uint32]string{hostNS: hostTable, olderNS: "40 39 254:0 / / rw - ext4 /dev/vda rw\n41 40 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"})
	w.send(mountEv(400, "kubelet", hostNS, "/dev/loop0", "/srv/vol", "ext4", 0, 0))
	w.send(exitEv(401, "true", hostNS))
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0))
	w.c.Flush()
	if len(w.findings) != 0 {
		t.Fatalf("the older namespace's own mount is reported as a leak: %s", w.findings[0].Line())
	}
}
