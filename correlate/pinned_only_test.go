package correlate_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// A call fails on a device that no mount table shows (mkfs.ext4
// /dev/loop0: EBUSY) and that only processes hold: the finding is about
// them, each namespace they are in a holder kept busy by its pins.

// mkfsFails sends mkfs.ext4[50]'s failing open of /dev/loop0 (EBUSY) from
// the node's namespace and returns the single finding it makes.
func mkfsFails(w *world) *finding.Finding {
	w.t.Helper()
	w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
	f := w.only()
	if f.Kind != finding.KindFailure {
		w.t.Fatalf("got a %s, want a failure: %s", f.Kind, f.Line())
	}
	return f
}

// loopPin is proc's pin of /dev/loop0's device by fd 7 at path.
func loopPin(p procfs.Process, kind procfs.PinKind, path string) procfs.Pin {
	fd := 7
	return procfs.Pin{Process: p, Kind: kind, Dev: event.MakeDev(7, 0), Path: path, FD: &fd}
}

// wantOneHolder checks f's only holder: its namespace and whether the
// kernel detached a copy it had.
func wantOneHolder(t *testing.T, f *finding.Finding, ns uint32, detached bool) {
	t.Helper()
	if len(f.Holders) != 1 {
		t.Fatalf("got %d holders, want 1 (mnt:[%d]): %s", len(f.Holders), ns, f.Line())
	}
	h := f.Holders[0]
	if h.MntNS != ns || h.Self != (ns == hostNS) || h.Where != "" || h.Detached != detached {
		t.Errorf("got holder mnt:[%d] self %v where %q detached %v, want mnt:[%d] self %v where \"\" detached %v",
			h.MntNS, h.Self, h.Where, h.Detached, ns, ns == hostNS, detached)
	}
}

// TestDeviceHeldOpenWhereNoTableShowsIt: qemu[60] has the device itself
// open (blockdev-fd), and no namespace mounts it. In the caller's own
// namespace that is no leak but the device in use; in another namespace,
// the device held open there. Neither is a copy the kernel detached:
// mnt:[80]'s tables, read twice, never showed the device.
func TestDeviceHeldOpenWhereNoTableShowsIt(t *testing.T) {
	const rootOnly = "110 109 254:0 / / rw - ext4 /dev/vda rw\n"
	for _, tc := range []struct {
		name     string
		ns       uint32 // qemu's namespace
		line     string
		evidence string
	}{
		{"in the caller's namespace", hostNS,
			"EBUSY openat /dev/loop0 (7:0) by mkfs.ext4[50]: kept busy in mnt:[4026531840], held by qemu[60] blockdev-fd 7 /dev/loop0; " +
				"not a leak: the device is open in the host by qemu[60] (blockdev-fd 7 /dev/loop0) [cause: in-use]. " +
				"Fix: stop qemu[60] or have it close the device, then retry",
			"qemu[60] (blockdev-fd 7 /dev/loop0) in mnt:[4026531840]"},
		{"in another namespace", 80,
			"EBUSY openat /dev/loop0 (7:0) by mkfs.ext4[50]: kept busy in mnt:[80], held by qemu[60] blockdev-fd 7 /dev/loop0; " +
				"the device is held open in mnt:[80] by qemu[60] (blockdev-fd 7 /dev/loop0) [cause: in-use]. " +
				"Fix: stop qemu[60] or have it close the device, then retry",
			"qemu[60] (blockdev-fd 7 /dev/loop0) in mnt:[80]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostWithoutVol})
			w.send(unshareEv(20, "holder", hostNS, 80))
			w.proc.procs = append(w.proc.procs, proc(20, "holder", 80, ""))
			w.proc.tables[80] = rootOnly
			w.send(exitEv(21, "true", 80)) // mnt:[80]'s table is read
			w.proc.tables[80] = rootOnly + "112 110 0:50 / /mnt rw - tmpfs tmp rw\n"
			w.send(mountEv(20, "holder", 80, "tmp", "/mnt", "tmpfs", 0, 0))
			w.send(exitEv(22, "true", 80)) // read again, settled after the mount
			qemu := proc(60, "qemu", tc.ns, "")
			w.proc.procs = append(w.proc.procs, qemu)
			w.proc.pins = []procfs.Pin{loopPin(qemu, procfs.PinBlockFD, "/dev/loop0")}
			f := mkfsFails(w)
			if f.Cause != finding.CauseInUse || f.Line() != tc.line {
				t.Errorf("got cause %s, line\n%s\nwant %s, line\n%s", f.Cause, f.Line(), finding.CauseInUse, tc.line)
			}
			wantOneHolder(t, f, tc.ns, false)
			if len(f.Evidence) != 2 || f.Evidence[1].What != tc.evidence {
				t.Errorf("got evidence %+v, want the call and %q", f.Evidence, tc.evidence)
			}
		})
	}
}

// TestDetachedCopyKeptOnlyByAProcess: holder[20] mounted /dev/loop0 at
// /srv/vol in its own namespace, mnt:[80], then unmounted it lazily
// (umount -l) while qemu[60] there had a disk image open on it: the kernel
// detached the mount, busy. Its table, read again, no longer shows it, nor
// does any other. The finding says the detached copy is kept busy by qemu,
// on that device, and what to do.
func TestDetachedCopyKeptOnlyByAProcess(t *testing.T) {
	const rootOnly = "110 109 254:0 / / rw - ext4 /dev/vda rw\n"
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostWithoutVol})
	w.send(unshareEv(20, "holder", hostNS, 80))
	w.proc.procs = append(w.proc.procs, proc(20, "holder", 80, ""))
	w.proc.tables[80] = rootOnly + "111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	w.send(mountEv(20, "holder", 80, "/dev/loop0", "/srv/vol", "ext4", 0, 0))
	w.send(exitEv(21, "true", 80)) // mnt:[80]'s table is read, settled after the mount
	w.proc.tables[80] = rootOnly
	lazy := umountEv(20, "holder", 80, "/srv/vol", 0)
	lazy.Flags, lazy.FlagNames = unix.MNT_DETACH, event.FlagNames(event.KindUmount, unix.MNT_DETACH)
	w.send(lazy)
	w.send(exitEv(22, "true", 80)) // read again
	qemu := proc(60, "qemu", 80, "")
	w.proc.procs = append(w.proc.procs, qemu)
	w.proc.pins = []procfs.Pin{loopPin(qemu, procfs.PinFD, "/srv/vol/disk.img")}
	f := mkfsFails(w)
	const line = "EBUSY openat /dev/loop0 (7:0) by mkfs.ext4[50]: kept busy in mnt:[80], whose copy the kernel detached, " +
		"held by qemu[60] fd 7 /srv/vol/disk.img; no mount table shows it any more (the kernel detached the copies), " +
		"but qemu[60] (fd 7 /srv/vol/disk.img) in mnt:[80] keeps a detached copy busy [cause: busy-copy]. " +
		"Fix: stop qemu[60] or move it off /srv/vol/disk.img; the detached copy then goes away"
	if f.Cause != finding.CauseBusyCopy || f.Line() != line {
		t.Errorf("got cause %s, line\n%s\nwant %s, line\n%s", f.Cause, f.Line(), finding.CauseBusyCopy, line)
	}
	wantOneHolder(t, f, 80, true)
	const evidence = "qemu[60] (fd 7 /srv/vol/disk.img) in mnt:[80] is on device 7:0"
	if len(f.Evidence) != 2 || f.Evidence[1].What != evidence {
		t.Errorf("got evidence %+v, want the call and %q", f.Evidence, evidence)
	}
}

// TestDeviceHeldOpenInTwoNamespacesInTheirOrder: processes in two other
// namespaces have the device open and no table shows it: each namespace
// is a holder, in the order of their inode numbers (not of the map the
// pins come in), and the verdict is about the first.
func TestDeviceHeldOpenInTwoNamespacesInTheirOrder(t *testing.T) {
	qemu, dd := proc(60, "qemu", 90, ""), proc(61, "dd", 80, "")
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), qemu, dd}, map[uint32]string{hostNS: hostWithoutVol})
	w.proc.pins = []procfs.Pin{loopPin(qemu, procfs.PinBlockFD, "/dev/loop0"), loopPin(dd, procfs.PinBlockFD, "/dev/loop0")}
	f := mkfsFails(w)
	const line = "EBUSY openat /dev/loop0 (7:0) by mkfs.ext4[50]: kept busy in mnt:[80], held by dd[61] blockdev-fd 7 /dev/loop0; " +
		"kept busy in mnt:[90], held by qemu[60] blockdev-fd 7 /dev/loop0; " +
		"the device is held open in mnt:[80] by dd[61] (blockdev-fd 7 /dev/loop0) [cause: in-use]. " +
		"Fix: stop dd[61] or have it close the device, then retry"
	if f.Line() != line {
		t.Errorf("got\n%s\nwant\n%s", f.Line(), line)
	}
}
