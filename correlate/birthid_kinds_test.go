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

// Every holder names its namespace's birth id where the kernel tells it
// (NS_GET_MNTNS_ID through one of the namespace's processes), not only one
// whose creation event carried it: the tests' exact finding sets match a
// holder to a test's namespace by that id, since the kernel gives a freed
// inode to the next namespace at once. A holder that only pins the object
// (a detached copy kept by a process of the node), `why`'s holders (a
// namespace that predates tracing) and a stale bind's holder (the
// failure's and why's) each name it; controls: a kernel without the ioctl
// names none, and a namespace whose inode another namespace has now (its
// process shows another inode) is not given the stranger's id.
func TestBirthIDOfEveryHolderKind(t *testing.T) {
	for _, tc := range []struct {
		name  string
		run   func(t *testing.T, ids map[uint32]uint64) *finding.Finding
		ns    uint32
		ids   map[uint32]uint64
		id    uint64
		extra func(*fakeProc)
	}{
		{"a holder that only pins the object", pinOnlyLeak, hostNS, map[uint32]uint64{hostNS: 1}, 1, nil},
		{"a holder that only pins the object, no ioctl (control)", pinOnlyLeak, hostNS, nil, 0, nil},
		{"why's holder, its namespace made before tracing", whyHeld, 70, map[uint32]uint64{hostNS: 1, 70: 7070}, 7070, nil},
		{"why's holder, no ioctl (control)", whyHeld, 70, nil, 0, nil},
		{"a stale bind's holder (the failure)", staleBindFailure, hostNS, map[uint32]uint64{hostNS: 1}, 1, nil},
		{"a stale bind's holder (why)", staleBindWhy, hostNS, map[uint32]uint64{hostNS: 1}, 1, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.run(t, tc.ids)
			i := slices.IndexFunc(f.Holders, func(h finding.Holder) bool { return h.MntNS == tc.ns })
			if i < 0 {
				t.Fatalf("no holder in mnt:[%d]: %s", tc.ns, f.Line())
			}
			if got := f.Holders[i].MntNSID; got != tc.id {
				t.Errorf("the holder in mnt:[%d] names birth id %d, want %d: %s", tc.ns, got, tc.id, f.Line())
			}
		})
	}
}

// pinOnlyLeak: the holder of a private copy exits after the unmount, and
// reader[60] of the node keeps the detached copy by an open file.
func pinOnlyLeak(t *testing.T, ids map[uint32]uint64) *finding.Finding {
	const priv = 80
	w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
		map[uint32]string{hostNS: hostTable})
	w.proc.nsids = ids
	w.send(unshareEv(20, "holder", hostNS, priv))
	w.proc.procs = append(w.proc.procs, proc(20, "holder", priv, ""))
	w.proc.tables[priv] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
	fd := 3
	reader := proc(60, "reader", hostNS, "")
	w.proc.procs = append(w.proc.procs, reader)
	w.proc.pins = []procfs.Pin{{Process: reader, Kind: procfs.PinFD, Dev: event.MakeDev(7, 0), Path: "/file", FD: &fd}}
	w.proc.procs = slices.DeleteFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 20 })
	delete(w.proc.tables, priv)
	w.send(exitEv(20, "holder", priv))
	w.now = w.now.Add(3 * time.Second)
	w.send(exitEv(90, "true", hostNS))
	f := w.only()
	if f.Kind != finding.KindLeak {
		t.Fatalf("want a leak: %s", f.Line())
	}
	return f
}

// whyHeld: why asks about /dev/loop0, which a monitoring container (made
// before tracing) holds a copy of.
func whyHeld(t *testing.T, ids map[uint32]uint64) *finding.Finding {
	c := whyWorldIDs(t, ids)
	f := c.Why(correlate.Target{Path: "/dev/loop0", Dev: event.MakeDev(7, 0)}, time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC))
	if f == nil {
		t.Fatal("nothing holds /dev/loop0")
	}
	return f
}

// whyWorldIDs is whyWorld (not remembered) with the kernel's birth ids.
func whyWorldIDs(t *testing.T, ids map[uint32]uint64) *correlate.Correlator {
	t.Helper()
	proc := &fakeProc{host: hostNS, blocks: map[string]event.Dev{"/dev/loop0": event.MakeDev(7, 0)}, nsids: ids,
		procs: []procfs.Process{proc(1, "systemd", hostNS, ""), proc(1500, "node_exporter", 70, "/docker/"+cid)},
		tables: map[uint32]string{
			hostNS: hostWithoutVol + "12 1 254:0 /pods/x/volumes/cfg/extra.ini//deleted /srv/cfg rw shared:1 - ext4 /dev/vda rw\n",
			70:     "100 99 0:90 / / rw - overlay overlay rw\n101 100 254:0 / /host rw - ext4 /dev/vda rw\n102 101 7:0 / /host/srv/vol rw - ext4 /dev/loop0 rw\n",
		}}
	c := correlate.New(proc, correlate.Options{}, func(*finding.Finding) {})
	if err := c.Start(); err != nil {
		t.Fatal(err)
	}
	return c
}

// staleBindFailure: a mount whose source is a bind of a deleted file fails
// with ENOENT.
func staleBindFailure(t *testing.T, ids map[uint32]uint64) *finding.Finding {
	src := "/pods/x/volume-subpaths/cfg/c/0"
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")},
		map[uint32]string{hostNS: hostTable + "12 1 254:0 /pods/x/volumes/cfg/extra.ini//deleted " + src + " rw shared:1 - ext4 /dev/vda rw\n"})
	w.proc.nsids = ids
	w.send(mountEv(1, "systemd", hostNS, src, "/srv/etc/extra.ini", "", unix.MS_BIND, -int64(unix.ENOENT)))
	f := w.only()
	if f.Cause != finding.CauseStaleBind {
		t.Fatalf("want a stale bind: %s", f.Line())
	}
	return f
}

// staleBindWhy: why asks about a path that is a bind of a deleted file.
func staleBindWhy(t *testing.T, ids map[uint32]uint64) *finding.Finding {
	c := whyWorldIDs(t, ids)
	f := c.Why(correlate.Target{Path: "/srv/cfg"}, time.Date(2026, 11, 21, 13, 0, 0, 0, time.UTC))
	if f == nil || f.Cause != finding.CauseStaleBind {
		t.Fatalf("want a stale bind: %v", f)
	}
	return f
}
