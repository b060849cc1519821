package correlate_test

import (
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
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

// The same teardown, seen by a daemon running behind the kernel: by the
// time it reads the holder's table for the unmount, the rmdir has already
// detached the copy at the volume's path, so the first table it reads
// shows the filesystem only at the holder's own path. The bind there was
// seen made, from the volume's path, before the unmount (while the device
// number was still the volume's), so it is the volume's filesystem, not
// another tmpfs that got the number once it was freed (cmd
// TestLeakKeptAtAnotherPath/tmpfs reported nothing in 4 runs of 17 under
// -race beside a busy core). The controls show the same table with
// nothing that proves the place: a bind from elsewhere, a tmpfs of the
// holder's own, the bind unmounted and something mounted there since,
// events lost since the bind. Each settles, so a false leak would show.
func TestLeakKeptAtAnotherPathFirstReadAfterTheDetach(t *testing.T) {
	const node, priv = 70, 80
	const nodeWithVol = "60 59 254:0 / / rw shared:1 - ext4 /dev/vda rw\n61 60 0:40 / /pods/vol rw shared:7 - tmpfs vol rw\n"
	const nodeWithout = "60 59 254:0 / / rw shared:1 - ext4 /dev/vda rw\n"
	bind := func(src string) *event.Event {
		return mountEv(21, "mount", priv, src, "/holder/cache", "", unix.MS_BIND, 0)
	}
	for _, tc := range []struct {
		name   string
		before []*event.Event // in the holder's namespace, before the unmount
		dev    string         // at /holder/cache in the holder's table, read first after the rmdir
		leak   bool
	}{
		{"bound from the volume", []*event.Event{bind("/pods/vol")}, "0:40", true},
		{"bound from elsewhere", []*event.Event{bind("/srv/other")}, "0:40", false},
		// A tmpfs's source is free text: this one names the volume's path.
		{"a tmpfs of its own", []*event.Event{mountEv(21, "mount", priv, "/pods/vol", "/holder/cache", "tmpfs", 0, 0)}, "0:40", false},
		{"bound from a tmpfs mounted over the volume", []*event.Event{mountEv(21, "mount", priv, "tmp", "/pods/vol", "tmpfs", 0, 0),
			bind("/pods/vol")}, "0:41", false},
		{"bind replaced", []*event.Event{bind("/pods/vol"), umountEv(22, "umount", priv, "/holder/cache", 0),
			mountEv(23, "mount", priv, "tmp", "/holder/cache", "tmpfs", 0, 0)}, "0:40", false},
		{"events lost since the bind", []*event.Event{bind("/pods/vol"), {Kind: event.KindLost, Lost: 2, SyscallNr: -1}}, "0:40", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second, SettleDelay: time.Second},
				[]procfs.Process{proc(1, "systemd", hostNS, ""), proc(10, "sleep", node, "")},
				map[uint32]string{hostNS: hostTable, node: nodeWithVol})
			w.send(unshareEv(20, "unshare", node, priv))
			w.proc.procs = append(w.proc.procs, proc(20, "sleep", priv, ""))
			w.send(tc.before...)
			// Read for the first time after the unmount and the rmdir.
			w.proc.tables[node] = nodeWithout
			w.proc.tables[priv] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n112 110 " + tc.dev + " / /holder/cache rw - tmpfs vol rw\n"
			w.send(umountEv(30, "umount", node, "/pods/vol", 0))
			w.send(exitEv(31, "rmdir", node))
			w.now = w.now.Add(2 * time.Second)
			w.send(exitEv(90, "true", hostNS)) // quiet since: the next event settles the leak
			w.proc.procs = slices.DeleteFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 90 })
			if !tc.leak {
				for _, f := range w.findings {
					t.Errorf("want no finding, got:\n%s", f.Line())
				}
				return
			}
			f := w.only()
			if f.Kind != finding.KindLeak || f.Cause != finding.CauseUnshare || len(f.Holders) != 1 || f.Holders[0].MntNS != priv || f.Holders[0].Where != "/holder/cache" {
				t.Errorf("want a leak [cause: unshare] held in mnt:[%d] at /holder/cache:\n%s", priv, f.Line())
			}
		})
	}
}
