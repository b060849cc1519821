package correlate_test

import (
	"slices"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// TestRbindCitedWhenItIsTheFirstEvent: a container made before tracing
// binds the node's / at /host with the new mount API (open_tree of / with
// OPEN_TREE_CLONE|AT_RECURSIVE, move_mount to /host, mount_setattr
// private), and that open_tree is the very first event traced. When the
// node's unmount leaves a copy there, the leak cites that bind (who made
// it, and when), never "made before tracing began".
func TestRbindCitedWhenItIsTheFirstEvent(t *testing.T) {
	w := runcWorld(t)
	ot, mm := runcRbindOfRoot()
	sa := base(event.KindMountSetattr, 1500, "runc", 70, 442, 0)
	sa.Path, sa.Propagation, sa.PropagationName = "/host", unix.MS_PRIVATE, "MS_PRIVATE"
	w.send(ot, mm, sa)
	w.proc.tables[70] = "100 99 0:90 / / rw - overlay overlay rw\n101 100 254:0 / /host rw - ext4 /dev/vda rw\n102 101 7:0 / /host/srv/vol rw - ext4 /dev/loop0 rw\n"
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(1000, "umount", hostNS, "/srv/vol", 0))
	f := w.only()
	if f.Cause != finding.CauseRprivateBind || f.Inferred || !strings.Contains(f.Summary, "leaked by rbind / → /host + mount_setattr(MS_PRIVATE) by runc[1500] at 12:01:00.200") {
		t.Errorf("want the rbind by runc[1500] cited:\n%s", f.Line())
	}
	if !slices.ContainsFunc(f.Evidence, func(e finding.Evidence) bool { return e.Event != nil && e.Event.Kind == "open_tree" }) {
		t.Errorf("the open_tree is not cited: %+v", f.Evidence)
	}
}

// TestRbindCitedIsTheHolders: two containers each bind the node's / at
// /host privately, the holder's first; the node's unmount leaves a copy in
// the holder's namespace only (the other container has gone). The leak
// cites the holder's own bind, by its runc, not the later one of the
// other container, whose target looks the same.
func TestRbindCitedIsTheHolders(t *testing.T) {
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
	root := func(id string) string { return "/var/lib/docker/overlay2/" + id + "/merged" }
	w.send(unshareEv(1500, "runc", hostNS, 70),
		mountEv(1500, "runc", 70, "/", root(cid)+"/host", "", unix.MS_BIND|unix.MS_REC, 0),
		mountEv(1500, "runc", 70, "", root(cid)+"/host", "", unix.MS_REC|unix.MS_PRIVATE, 0),
		unshareEv(1700, "runc", hostNS, 71),
		mountEv(1700, "runc", 71, "/", root("other")+"/host", "", unix.MS_BIND|unix.MS_REC, 0),
		mountEv(1700, "runc", 71, "", root("other")+"/host", "", unix.MS_REC|unix.MS_PRIVATE, 0))
	w.proc.procs = append(w.proc.procs, proc(1600, "node_exporter", 70, "/docker/"+cid))
	w.proc.tables[70] = "100 99 0:90 / / rw - overlay overlay rw\n101 100 254:0 / /host rw - ext4 /dev/vda rw\n102 101 7:0 / /host/srv/vol rw - ext4 /dev/loop0 rw\n"
	w.send(exitEv(1500, "runc", 70), exitEv(1700, "runc", 71))
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(1000, "umount", hostNS, "/srv/vol", 0))
	f := w.only()
	if f.Cause != finding.CauseRprivateBind || !strings.Contains(f.Summary, "by runc[1500] at 12:01:00.400") || strings.Contains(f.Line(), "runc[1700]") {
		t.Errorf("want the holder's rbind by runc[1500] cited, not runc[1700]'s:\n%s", f.Line())
	}
}
