package correlate_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// heldAtHost is the table of a container's namespace 70 whose private bind
// of the node's / at /host still holds the node's /srv/vol.
const heldAtHost = "100 99 0:90 / / rw - overlay overlay rw\n101 100 254:0 / /host rw - ext4 /dev/vda rw\n102 101 7:0 / /host/srv/vol rw - ext4 /dev/loop0 rw\n"

// TestRbindFoundAcrossEventsBetweenOpenTreeAndMoveMount: the runtime's
// open_tree of / and its move_mount to /host are not adjacent in the
// history (it mounts /proc between them). The leak still cites the
// open_tree that made the tree, found by walking back from the move_mount.
func TestRbindFoundAcrossEventsBetweenOpenTreeAndMoveMount(t *testing.T) {
	w := runcWorld(t)
	ot, mm := runcRbindOfRoot()
	w.send(ot, mountEv(1500, "runc", 70, "proc", "/proc", "proc", 0, 0), mm)
	w.proc.tables[70] = heldAtHost
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(1000, "umount", hostNS, "/srv/vol", 0))
	f := w.only()
	const want = "leaked by rbind / → /host by runc[1500] at 12:01:00.200 (docker -v / with the default propagation, rprivate, container 5f2c0e1a9b8d); the host unmounted /srv/vol at 12:01:00.800 and the copy stayed"
	wantRbindSummary(t, f, want)
}

// TestRprivateBindNamesTheContainerOfAnyMember: a private bind made before
// tracing began, in a namespace whose oldest process is not in a
// container but a later one is: the leak names that container.
func TestRprivateBindNamesTheContainerOfAnyMember(t *testing.T) {
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(1500, "sh", 70, "/user.slice"), proc(1600, "node_exporter", 70, "/docker/"+cid)},
		map[uint32]string{hostNS: hostTable, 70: heldAtHost})
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(1000, "umount", hostNS, "/srv/vol", 0))
	f := w.only()
	const want = "leaked by a private recursive bind of / at /host in mnt:[70], made before tracing began (docker -v / with the default propagation, rprivate, container 5f2c0e1a9b8d); the host unmounted /srv/vol at 12:01:00.200 and the copy stayed"
	wantRbindSummary(t, f, want)
}

// TestRbindCitedIsTheOneAtTheBindTarget: the holder's runtime binds the
// node's / recursively at /host, and later at another place it undoes
// again. The leak cites the bind at /host, the copy's own, not the later
// bind of the same source elsewhere.
func TestRbindCitedIsTheOneAtTheBindTarget(t *testing.T) {
	w := runcWorld(t)
	w.send(mountEv(1500, "runc", 70, "/", "/host", "", unix.MS_BIND|unix.MS_REC, 0),
		mountEv(1500, "runc", 70, "/", "/mnt/scratch", "", unix.MS_BIND|unix.MS_REC, 0))
	w.proc.tables[70] = heldAtHost
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(1000, "umount", hostNS, "/srv/vol", 0))
	f := w.only()
	const want = "leaked by rbind / → /host by runc[1500] at 12:01:00.200 (docker -v / with the default propagation, rprivate, container 5f2c0e1a9b8d); the host unmounted /srv/vol at 12:01:00.600 and the copy stayed"
	wantRbindSummary(t, f, want)
}

// TestMadePrivateCitedIsTheBindsOwn: after the rbind at /host, the runtime
// makes another mount private before it makes /host rprivate. The leak
// cites the change of /host, not the earlier one elsewhere.
func TestMadePrivateCitedIsTheBindsOwn(t *testing.T) {
	w := runcWorld(t)
	w.send(mountEv(1500, "runc", 70, "/", "/host", "", unix.MS_BIND|unix.MS_REC, 0),
		mountEv(1500, "runc", 70, "", "/mnt/other", "", unix.MS_PRIVATE, 0),
		mountEv(1500, "runc", 70, "", "/host", "", unix.MS_REC|unix.MS_PRIVATE, 0))
	w.proc.tables[70] = heldAtHost
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(1000, "umount", hostNS, "/srv/vol", 0))
	f := w.only()
	const want = "leaked by rbind / → /host + MS_REC|MS_PRIVATE by runc[1500] at 12:01:00.200 (docker -v / with the default propagation, rprivate, container 5f2c0e1a9b8d); the host unmounted /srv/vol at 12:01:00.800 and the copy stayed"
	wantRbindSummary(t, f, want)
}

// TestRbindCitedWhenItsMoveMountIsTheLastEvent: the node's /srv/vol was
// unmounted before tracing, the container's runtime binds / at /host with
// open_tree and move_mount, and then an rmdir of /srv/vol on the node
// fails busy (a failure the history does not keep). The move_mount is the
// history's last event; the finding still cites the rbind it attached.
func TestRbindCitedWhenItsMoveMountIsTheLastEvent(t *testing.T) {
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(1500, "runc", 70, "/docker/"+cid)}, map[uint32]string{hostNS: hostWithoutVol,
		70: heldAtHost})
	ot, mm := runcRbindOfRoot()
	w.send(ot, mm)
	w.send(failEv(300, "rmdir", hostNS, 84, "/srv/vol", int64(unix.EBUSY)))
	f := w.only()
	const want = "leaked by rbind / → /host by runc[1500] at 12:01:00.200 (docker -v / with the default propagation, rprivate, container 5f2c0e1a9b8d)"
	wantRbindSummary(t, f, want)
}

// TestRbindOfTheVolumeItselfIsTheLeak: the runtime binds the node's
// /srv/vol itself (docker -v /srv/vol:/data), not a tree above it: the
// held copy is the private bind, with no bind above it. The leak cites
// that bind, not the namespace's private root.
func TestRbindOfTheVolumeItselfIsTheLeak(t *testing.T) {
	w := runcWorld(t)
	w.send(mountEv(1500, "runc", 70, "/srv/vol", "/data", "", unix.MS_BIND|unix.MS_REC, 0))
	w.proc.tables[70] = "100 99 0:90 / / rw - overlay overlay rw\n101 100 7:0 / /data rw - ext4 /dev/loop0 rw\n"
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(1000, "umount", hostNS, "/srv/vol", 0))
	f := w.only()
	const want = "leaked by rbind /srv/vol → /data by runc[1500] at 12:01:00.200 (docker -v /srv/vol with the default propagation, rprivate, container 5f2c0e1a9b8d); the host unmounted /srv/vol at 12:01:00.400 and the copy stayed"
	wantRbindSummary(t, f, want)
}

// wantRbindSummary: f is an rprivate-bind leak with the summary want.
func wantRbindSummary(t *testing.T, f *finding.Finding, want string) {
	t.Helper()
	if f.Cause != finding.CauseRprivateBind || f.Summary != want {
		t.Errorf("cause %s, summary %q\nwant %s, %q", f.Cause, f.Summary, finding.CauseRprivateBind, want)
	}
}

// runcWorld: the node (systemd[1], hostTable) and a container's runc[1500]
// in mnt:[70], whose table has its overlay root only, so far.
func runcWorld(t *testing.T) *world {
	t.Helper()
	return newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(1500, "runc", 70, "/docker/"+cid)}, map[uint32]string{hostNS: hostTable,
		70: "100 99 0:90 / / rw - overlay overlay rw\n"})
}
