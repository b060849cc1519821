package correlate_test

import (
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// A holder in a private namespace binds its copy of a node's tmpfs volume
// to a directory of its own; the node unmounts the volume and removes its
// directory, which detaches the holder's copy at the volume's path; the
// filesystem stays at the holder's own path. The leak is the unshare's:
// the bind is the holder's own, of its own copy, seen made after the
// namespace was. The node's table, read last before its unmount, still
// shows the volume: judged on it, the holder's mount looked like a bind of
// the node's volume made before tracing began ([cause: rprivate-bind]; cmd
// TestLeakKeptAtAnotherPath in most runs on a quiet machine, where nothing
// else had the node's table read again before the leak settled). Tables
// quiet for the settle delay are read again before a leak is confirmed.
func TestLeakKeptAtAnotherPathOnAQuietMachine(t *testing.T) {
	const node, priv = 70, 80
	const nodeWithVol = "60 59 254:0 / / rw shared:1 - ext4 /dev/vda rw\n61 60 0:40 / /pods/vol rw shared:7 - tmpfs vol rw\n"
	const nodeWithout = "60 59 254:0 / / rw shared:1 - ext4 /dev/vda rw\n"
	w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second, SettleDelay: time.Second},
		[]procfs.Process{proc(1, "systemd", hostNS, ""), proc(10, "sleep", node, "")},
		map[uint32]string{hostNS: hostTable, node: nodeWithVol})
	w.send(unshareEv(20, "unshare", node, priv))
	w.proc.procs = append(w.proc.procs, proc(20, "sleep", priv, ""))
	w.proc.tables[priv] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 0:40 / /pods/vol rw - tmpfs vol rw\n112 110 0:40 / /holder/cache rw - tmpfs vol rw\n"
	w.send(mountEv(21, "mount", priv, "/pods/vol", "/holder/cache", "", unix.MS_BIND, 0))
	w.proc.tables[node] = nodeWithout
	w.send(umountEv(30, "umount", node, "/pods/vol", 0))
	// rmdir /pods/vol detaches the holder's copy there.
	w.proc.tables[priv] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n112 110 0:40 / /holder/cache rw - tmpfs vol rw\n"
	w.send(exitEv(31, "rmdir", node))
	w.now = w.now.Add(2 * time.Second)
	w.send(exitEv(90, "true", hostNS)) // quiet since: the next event settles the leak
	w.proc.procs = slices.DeleteFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 90 })
	f := w.only()
	t.Log(f.Line())
	if f.Kind != finding.KindLeak || f.Cause != finding.CauseUnshare || len(f.Holders) != 1 || f.Holders[0].MntNS != priv || f.Holders[0].Where != "/holder/cache" {
		t.Errorf("want a leak [cause: unshare] held in mnt:[%d] at /holder/cache:\n%s", priv, f.Line())
	}
}
