package correlate_test

import (
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// The holder of a private copy exits after the unmount; its copy went with
// its namespace, detached, but a process in the node's namespace still has
// a file open that it opened through that copy (/proc/HOLDER/root/...):
// the copy, in no namespace's table now, keeps the device busy. The leak
// names that process and its fd, as the failure that follows does, never
// "goes once nothing uses it" naming no one (the holder-exited scenario).
func TestDetachedWithItsNamespacePinnedElsewhere(t *testing.T) {
	const priv = 80
	settles := func(w *world) {
		w.now = w.now.Add(3 * time.Second)
		w.send(exitEv(90, "true", hostNS))
	}
	for _, tc := range []struct {
		name string
		pin  procfs.PinKind
		host string // the node's table after the unmount
		then func(w *world)
		want []finding.FindingKind
	}{
		{"the teardown settles", procfs.PinFD, hostWithoutVol, settles, []finding.FindingKind{finding.KindLeak}},
		{"a failure on it before the teardown settled", procfs.PinFD, hostWithoutVol, func(w *world) {
			w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
		}, []finding.FindingKind{finding.KindLeak, finding.KindFailure}},
		// Controls: the device itself held open is no copy's pin; a file
		// on the filesystem the node still has mounted elsewhere is
		// reached through that mount.
		{"the device itself is open", procfs.PinBlockFD, hostWithoutVol, settles, nil},
		{"the node still has it mounted elsewhere", procfs.PinFD, hostWithoutVol + "4 1 7:0 / /srv/other rw shared:4 - ext4 /dev/loop0 rw\n",
			settles, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
				map[uint32]string{hostNS: hostTable})
			w.send(unshareEv(20, "holder", hostNS, priv))
			w.proc.procs = append(w.proc.procs, proc(20, "holder", priv, ""))
			w.proc.tables[priv] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
			w.proc.tables[hostNS] = tc.host
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			fd := 3
			reader := proc(60, "reader", hostNS, "")
			w.proc.procs = append(w.proc.procs, reader)
			w.proc.pins = []procfs.Pin{{Process: reader, Kind: tc.pin, Dev: event.MakeDev(7, 0), Path: "/file", FD: &fd}}
			w.proc.procs = slices.DeleteFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 20 })
			delete(w.proc.tables, priv)
			w.send(exitEv(20, "holder", priv))
			tc.then(w)
			for _, f := range w.findings {
				t.Log(f.Line())
			}
			if len(w.findings) != len(tc.want) {
				t.Fatalf("%d findings, want %v", len(w.findings), tc.want)
			}
			for i, k := range tc.want {
				f := w.findings[i]
				if f.Kind != k {
					t.Errorf("finding %d is a %s, want %s", i, f.Kind, k)
				}
				line := f.Line()
				for _, want := range []string{"held by reader[60] fd 3 /file", "reader[60] (fd /file) keeps the copy busy"} {
					if !strings.Contains(line, want) {
						t.Errorf("%s lacks %q:\n%s", f.Kind, want, line)
					}
				}
				if _, a := f.Actor(); a == nil || a.PID != 60 || a.Role != finding.RolePinner {
					t.Errorf("%s actor %+v, want the pinner reader[60]:\n%s", f.Kind, a, line)
				}
			}
		})
	}
}

// The same for a tmpfs (no device: an anonymous 0:N, told by its
// superblock): the holder exits after the unmount, its copy goes detached
// with its namespace, and a process of the node keeps it, by its cwd (shown
// as "/", the root of the detached copy) or a file open in it. The leak
// names that process; a control whose tmpfs the node still has mounted
// elsewhere (the same superblock) names no one. Each also when the holder
// is already gone when the correlator reads the unmount (it runs behind
// the kernel: the holder was killed right after the teardown, its exit
// event comes next): its namespace had the copy at the unmount, and the
// kernel detached it with the namespace; the same for a block device.
func TestDetachedTmpfsPinnedElsewhere(t *testing.T) {
	const priv = 80
	const tmpfsHost = "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n3 1 0:40 / /srv/vol rw shared:3 - tmpfs vol rw\n"
	const gone = "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n"
	fd := 3
	tmpfs, loop := event.MakeDev(0, 40), event.MakeDev(7, 0)
	for _, tc := range []struct {
		name  string
		host  string // the node's table before and after the unmount
		after string
		pin   procfs.Pin
		early bool   // the holder is gone when the unmount is read
		want  string // the line's holder, "": no finding
	}{
		{"by a cwd", tmpfsHost, gone, procfs.Pin{Kind: procfs.PinCwd, Dev: tmpfs, Path: "/"}, false, "held by reader[60] cwd /"},
		{"by an open file", tmpfsHost, gone, procfs.Pin{Kind: procfs.PinFD, Dev: tmpfs, Path: "/file", FD: &fd}, false, "held by reader[60] fd 3 /file"},
		{"by a cwd, the holder gone when the unmount is read", tmpfsHost, gone, procfs.Pin{Kind: procfs.PinCwd, Dev: tmpfs, Path: "/"}, true, "held by reader[60] cwd /"},
		{"by an open file, the holder gone when the unmount is read", tmpfsHost, gone, procfs.Pin{Kind: procfs.PinFD, Dev: tmpfs, Path: "/file", FD: &fd}, true, "held by reader[60] fd 3 /file"},
		{"a block device, the holder gone when the unmount is read", hostTable, hostWithoutVol, procfs.Pin{Kind: procfs.PinFD, Dev: loop, Path: "/file", FD: &fd}, true, "held by reader[60] fd 3 /file"},
		// Controls: the node still has the tmpfs mounted elsewhere; nothing
		// pins the copy that went with the holder.
		{"the node still has it mounted elsewhere", tmpfsHost, gone + "4 1 0:40 / /srv/other rw shared:4 - tmpfs vol rw\n",
			procfs.Pin{Kind: procfs.PinCwd, Dev: tmpfs, Path: "/srv/other"}, false, ""},
		{"the node still has it mounted elsewhere, the holder gone when the unmount is read", tmpfsHost, gone + "4 1 0:40 / /srv/other rw shared:4 - tmpfs vol rw\n",
			procfs.Pin{Kind: procfs.PinCwd, Dev: tmpfs, Path: "/srv/other"}, true, ""},
		{"nothing pins it, the holder gone when the unmount is read", tmpfsHost, gone, procfs.Pin{}, true, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
				map[uint32]string{hostNS: tc.host})
			w.send(unshareEv(20, "holder", hostNS, priv))
			w.proc.procs = append(w.proc.procs, proc(20, "holder", priv, ""))
			// The holder's copy of the node's /srv/vol, private.
			for _, line := range strings.SplitAfter(tc.host, "\n") {
				if strings.Contains(line, " /srv/vol ") {
					copied := strings.Replace(strings.Replace(line, "3 1 ", "111 110 ", 1), " shared:3", "", 1)
					w.proc.tables[priv] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n" + copied
				}
			}
			w.send(exitEv(91, "true", hostNS)) // the holder's table is read
			w.proc.tables[hostNS] = tc.after
			reader := proc(60, "reader", hostNS, "")
			w.proc.procs = append(w.proc.procs, reader)
			if tc.pin.Dev != 0 {
				pin := tc.pin
				pin.Process = reader
				w.proc.pins = []procfs.Pin{pin}
			}
			holderGoes := func() {
				w.proc.procs = slices.DeleteFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 20 })
				delete(w.proc.tables, priv)
			}
			if tc.early {
				holderGoes()
			}
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			holderGoes()
			w.send(exitEv(20, "holder", priv))
			w.now = w.now.Add(3 * time.Second)
			w.send(exitEv(90, "true", hostNS))
			for _, f := range w.findings {
				t.Log(f.Line())
			}
			if tc.want == "" {
				if len(w.findings) != 0 {
					t.Fatalf("%d findings, want none", len(w.findings))
				}
				return
			}
			f := w.only()
			if f.Kind != finding.KindLeak || !strings.Contains(f.Line(), tc.want) {
				t.Errorf("want a leak %s:\n%s", tc.want, f.Line())
			}
			if _, a := f.Actor(); a == nil || a.PID != 60 || a.Role != finding.RolePinner {
				t.Errorf("actor %+v, want the pinner reader[60]:\n%s", a, f.Line())
			}
		})
	}
}

// The holder's namespace dies after the unmount, its copy detached and
// kept by a process of the node, and before the teardown settles another
// namespace gets its inode (namespaces are made all the time on a busy
// node, and the kernel gives a freed inode out again at once): the process
// list shows a process in "mnt:[80]", whose creation the correlator has not
// read yet. Its birth id says it is another namespace: the holder's is gone
// and the leak names the process that keeps the detached copy, not the
// stranger's namespace "whose table could not be read" (CI, full run:
// TestDetachedTmpfsPinnedFromTheNode/by_a_cwd named mnt:[N], the oracle
// found it gone). A control: the same id is the same namespace, alive.
func TestDetachedPinnedTheHolderInodeReused(t *testing.T) {
	for _, tc := range []struct {
		name   string
		nextID uint64 // the birth id of the namespace that has the inode at the settle
		want   string // the line's holder
	}{
		{"another namespace has the inode", 2002, "held by reader[60] cwd /"},
		{"the same namespace (control)", 1001, "mnt:[80]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := tmpfsHolderWorld(t, correlate.Options{LeakSettle: 2 * time.Second}, 1001)
			w.proc.nsids = map[uint32]uint64{hostNS: 1}
			w.send(exitEv(91, "true", hostNS)) // the holder's table is read
			pinFromTheNode(w)
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			holderGone(w)
			w.send(exitEv(20, "holder", tmpfsHolderNS))
			// A stranger in a namespace with the holder's inode; its table
			// is not readable (it is gone again by the time it is read).
			w.proc.procs = append(w.proc.procs, proc(70, "stranger", tmpfsHolderNS, ""))
			w.proc.nsids[tmpfsHolderNS] = tc.nextID
			w.now = w.now.Add(3 * time.Second)
			w.send(exitEv(90, "true", hostNS))
			f := w.only()
			t.Log(f.Line())
			if f.Kind != finding.KindLeak || !strings.Contains(f.Line(), tc.want) {
				t.Errorf("want a leak naming %s:\n%s", tc.want, f.Line())
			}
			if tc.nextID == 1001 {
				return
			}
			wantPinner(t, f)
			if strings.Contains(f.Line(), "stranger") || strings.Contains(f.Line(), "could be read") {
				t.Errorf("the stranger's namespace is taken for the holder's:\n%s", f.Line())
			}
		})
	}
}

// The same with nothing happening on the machine between the unmount and
// the end of the settle window but the holder's exit, a moment after the
// unmount (the live test: the node unmounts, the holder is killed, then
// all is quiet): the node's table was last read before the unmount, and
// the next event, past the deadline, settles the leak before it is read
// again. The tmpfs the node no longer has must not count as "still mounted
// somewhere" for that stale table: it is read again first. Before, on a
// quiet machine, TestDetachedTmpfsPinnedFromTheNode got no finding at
// all; on a busy one another process's event re-read the table in time.
func TestDetachedPinnedQuietUntilTheSettle(t *testing.T) {
	w := tmpfsHolderWorld(t, correlate.Options{LeakSettle: 2 * time.Second, SettleDelay: time.Second}, 0)
	w.now = w.now.Add(2 * time.Second)
	w.send(exitEv(91, "true", hostNS)) // both tables are read, quiet since
	pinFromTheNode(w)
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
	holderGone(w)
	w.send(exitEv(20, "holder", tmpfsHolderNS)) // 200 ms later: the node's table is not re-read yet
	w.now = w.now.Add(2 * time.Second)
	w.send(exitEv(90, "true", hostNS))
	wantPinner(t, w.only())
}

// The same when the holder is gone before the correlator, behind the
// kernel, handles the unmount: the process list it reads then no longer
// has the holder, whose exit event comes after the unmount's. The
// namespace is found gone at this very unmount, so it had its copy; a
// short-lived process that exited in it earlier (a shell's findmnt) does
// not date its death: it still had a member then. Before, the namespace
// was dated to that earlier exit, the unmount's search (grace 0) skipped
// it, and the live TestDetachedTmpfsPinnedFromTheNode got no finding on a
// quiet machine, in most runs.
func TestDetachedPinnedHolderGoneBeforeTheUnmountIsRead(t *testing.T) {
	for _, tc := range []struct {
		name        string
		earlierExit bool // a process exited in the holder's namespace before the unmount
	}{{"a process exited in it earlier", true}, {"nothing exited in it earlier", false}} {
		t.Run(tc.name, func(t *testing.T) {
			w := tmpfsHolderWorld(t, correlate.Options{LeakSettle: 2 * time.Second, SettleDelay: time.Second}, 0)
			if tc.earlierExit {
				w.send(exitEv(21, "findmnt", tmpfsHolderNS))
			}
			w.now = w.now.Add(1500 * time.Millisecond)
			w.send(exitEv(91, "true", hostNS)) // both tables are read: quiet for SettleDelay
			pinFromTheNode(w)
			holderGone(w)
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			w.send(exitEv(20, "holder", tmpfsHolderNS))
			w.now = w.now.Add(2 * time.Second)
			w.send(exitEv(90, "true", hostNS))
			wantPinner(t, w.only())
		})
	}
}

// The same when the event that settles the leak is the creation of the
// namespace that took the holder's inode, and its process is gone before
// it can be asked its birth id (unshare true: made, run and exited in a
// few milliseconds; the process list, read as the creation is handled,
// still shows it): the creation itself says the holder's namespace is
// gone, so the leak names the process keeping the detached copy, not the
// new namespace "whose table could not be read" (TestDetached
// TmpfsPinnedFromTheNode, 2 runs in 16 once the harness prepared events
// as the daemon does: privtest.AfterLeakSettle's unshare got the inode).
func TestDetachedPinnedSettledByTheInodesNextCreation(t *testing.T) {
	w := tmpfsHolderWorld(t, correlate.Options{LeakSettle: 2 * time.Second}, 1001)
	w.send(exitEv(91, "true", hostNS)) // the holder's table is read
	pinFromTheNode(w)
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
	holderGone(w)
	w.send(exitEv(20, "holder", tmpfsHolderNS))
	// The next namespace with the inode: listed, but neither its birth id
	// nor its table can be read through its process any more.
	w.proc.procs = append(w.proc.procs, proc(70, "true", tmpfsHolderNS, ""))
	w.now = w.now.Add(3 * time.Second)
	next := unshareEv(70, "unshare", hostNS, tmpfsHolderNS)
	next.NewMntNSID = 2002
	w.send(next)
	f := w.only()
	wantPinner(t, f)
	if strings.Contains(f.Line(), "could be read") {
		t.Errorf("the new namespace is taken for the holder's:\n%s", f.Line())
	}
}

// tmpfsHolderNS is the private namespace of the tmpfs tests' holder.
const tmpfsHolderNS = 80

// tmpfsHolderWorld: the node has a tmpfs at /srv/vol and holder[20]
// unshares a private namespace (birth id id, 0: not known) with a copy.
func tmpfsHolderWorld(t *testing.T, opts correlate.Options, id uint64) *world {
	t.Helper()
	w := newWorldOpts(t, opts, []procfs.Process{proc(1, "systemd", hostNS, "")},
		map[uint32]string{hostNS: "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n3 1 0:40 / /srv/vol rw shared:3 - tmpfs vol rw\n"})
	created := unshareEv(20, "holder", hostNS, tmpfsHolderNS)
	created.NewMntNSID = id
	w.send(created)
	w.proc.procs = append(w.proc.procs, proc(20, "holder", tmpfsHolderNS, ""))
	w.proc.tables[tmpfsHolderNS] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 0:40 / /srv/vol rw - tmpfs vol rw\n"
	return w
}

// pinFromTheNode: reader[60], in the node's namespace, has its cwd in the
// holder's copy (reached through /proc/20/root), and the node's table no
// longer has the tmpfs (its unmount is the caller's next event).
func pinFromTheNode(w *world) {
	reader := proc(60, "reader", hostNS, "")
	w.proc.procs = append(w.proc.procs, reader)
	w.proc.pins = []procfs.Pin{{Process: reader, Kind: procfs.PinCwd, Dev: event.MakeDev(0, 40), Path: "/"}}
	w.proc.tables[hostNS] = "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n"
}

// holderGone: holder[20] is gone from /proc, with its namespace and copy.
func holderGone(w *world) {
	w.proc.procs = slices.DeleteFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 20 })
	delete(w.proc.tables, tmpfsHolderNS)
}

// wantPinner checks f is a leak whose actor is the pinner reader[60].
func wantPinner(t *testing.T, f *finding.Finding) {
	t.Helper()
	t.Log(f.Line())
	if _, a := f.Actor(); f.Kind != finding.KindLeak || a == nil || a.PID != 60 || a.Role != finding.RolePinner {
		t.Errorf("want a leak naming the pinner reader[60]:\n%s", f.Line())
	}
}

// TestDetachedPinnedStaleTableReadAgain: the holder's copy went with its
// namespace and reader[60] keeps it from the node; mnt:[81]'s table, read
// when it had a bind of the tmpfs at /mnt/x, still shows the device, but
// a mount in mnt:[81] since made it stale (the bind itself went with no
// event: an rmdir detached it). It is read again, no longer has the
// device, and the leak names the pinner.
func TestDetachedPinnedStaleTableReadAgain(t *testing.T) {
	const other = 81
	w := tmpfsHolderWorld(t, correlate.Options{LeakSettle: 2 * time.Second}, 0)
	w.send(unshareEv(30, "app", hostNS, other))
	w.proc.procs = append(w.proc.procs, proc(30, "app", other, ""))
	w.proc.tables[other] = "120 119 254:0 / / rw - ext4 /dev/vda rw\n121 120 0:40 / /mnt/x rw - tmpfs vol rw\n"
	w.send(exitEv(91, "true", hostNS)) // the tables are read
	pinFromTheNode(w)
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
	holderGone(w)
	w.send(exitEv(20, "holder", tmpfsHolderNS))
	w.proc.tables[other] = "120 119 254:0 / / rw - ext4 /dev/vda rw\n122 120 0:41 / /mnt/y rw - tmpfs y rw\n"
	w.send(mountEv(30, "app", other, "y", "/mnt/y", "tmpfs", 0, 0))
	w.now = w.now.Add(2 * time.Second)
	w.send(exitEv(90, "true", hostNS))
	wantPinner(t, w.only())
}
