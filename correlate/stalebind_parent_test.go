package correlate_test

import (
	"strings"
	"testing"

	"github.com/mntleak/mntleak/procfs"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
)

// TestStaleBindSeenFromTheParent: runc's init, in the container's new
// namespace, fails to bind a subPath whose file was deleted (ENOENT), and
// exits: its namespace is gone before /proc is read. The namespace it was
// copied from (the node) has the stale bind, and answers: the failure is
// a stale bind held in the node's namespace, not nothing. The file was
// deleted after the node's table was read, which no event says: the
// node's table is read again. Nothing is missing from the answer: that
// the caller's namespace could not be read is no gap once its parent
// answered.
func TestStaleBindSeenFromTheParent(t *testing.T) {
	const containerNS = 90
	src := "/pods/x/volume-subpaths/cfg/c/0"
	bind := func(root string) string {
		return hostTable + "12 1 254:0 " + root + " " + src + " rw shared:1 - ext4 /dev/vda rw\n"
	}
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: bind("/pods/x/volumes/cfg/extra.ini")})
	w.send(unshareEv(1300, "runc", hostNS, containerNS))                   // runc:[2:INIT], gone by the time /proc is read
	w.proc.tables[hostNS] = bind("/pods/x/volumes/cfg/extra.ini//deleted") // the ConfigMap was updated
	w.send(mountEv(1300, "runc", containerNS, src, "/rootfs/etc/extra.ini", "", unix.MS_BIND, -int64(unix.ENOENT)))
	f := w.only()
	if f.Kind != finding.KindFailure || f.Cause != finding.CauseStaleBind || len(f.Holders) != 1 {
		t.Fatalf("want one stale-bind failure: %s", f.Line())
	}
	if h := f.Holders[0]; h.MntNS != hostNS || h.Self || h.Where != src {
		t.Errorf("holder %+v, want the node's mnt:[%d] at %s: %s", h, hostNS, src, f.Line())
	}
	if len(f.Missing) != 0 {
		t.Errorf("the parent answered, yet the finding says it misses %q: %s", f.Missing, f.Line())
	}
	if !strings.Contains(f.Summary, "is a bind of /pods/x/volumes/cfg/extra.ini, which has since been deleted") {
		t.Errorf("summary %q does not name the deleted file", f.Summary)
	}
}
