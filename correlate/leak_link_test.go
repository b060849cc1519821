package correlate_test

import (
	"testing"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
)

// TestFailureLinksToTheLeakOfItsObject: two teardowns leaked two devices
// into one namespace; a failure on the first device links to the leak of
// that device, not to the latest leak the namespace holds.
func TestFailureLinksToTheLeakOfItsObject(t *testing.T) {
	const holderNS = 80
	node := hostTable + "4 1 7:1 / /srv/vol2 rw shared:4 - ext4 /dev/loop1 rw\n"
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: node})
	w.proc.blocks["/dev/loop1"] = event.MakeDev(7, 1)
	w.send(mountEv(400, "kubelet", hostNS, "/dev/loop0", "/srv/vol", "ext4", 0, 0))
	w.send(mountEv(400, "kubelet", hostNS, "/dev/loop1", "/srv/vol2", "ext4", 0, 0))
	w.send(unshareEv(20, "agent", hostNS, holderNS))
	w.proc.procs = append(w.proc.procs, proc(20, "agent", holderNS, ""))
	w.proc.tables[holderNS] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n" +
		"112 110 7:1 / /srv/vol2 rw - ext4 /dev/loop1 rw\n"
	w.send(exitEv(21, "true", hostNS))
	w.proc.tables[hostNS] = hostWithoutVol + "4 1 7:1 / /srv/vol2 rw shared:4 - ext4 /dev/loop1 rw\n"
	w.send(umountEv(400, "kubelet", hostNS, "/srv/vol", 0))
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(400, "kubelet", hostNS, "/srv/vol2", 0))
	if len(w.findings) != 2 || w.findings[0].Object.Path != "/srv/vol" || w.findings[1].Object.Path != "/srv/vol2" {
		for _, f := range w.findings {
			t.Log(f.Line())
		}
		t.Fatalf("%d findings, want the leaks of /srv/vol and /srv/vol2", len(w.findings))
	}
	first := w.findings[0]
	w.findings = nil
	w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
	f := w.only()
	if f.Kind != finding.KindFailure || f.Leak == nil {
		t.Fatalf("want a failure linked to the leak of /dev/loop0: %s", f.Line())
	}
	if !f.Leak.Time.Equal(first.Time) || f.Leak.Summary != first.Summary {
		t.Errorf("linked to %+v, want the leak of /srv/vol at %v: %s", f.Leak, first.Time, f.Line())
	}
}

// TestFailureOnAnotherDirectoryOfALeakedFilesystem: the node bound two
// directories of one filesystem (one device number, roots /a and /b), and
// a namespace keeps copies of both. The leak of /srv/a is no explanation
// of a failure on /srv/b: the failure is not linked to it.
func TestFailureOnAnotherDirectoryOfALeakedFilesystem(t *testing.T) {
	const holderNS = 80
	binds := "4 1 0:50 /a /srv/a rw shared:4 - tmpfs tmpfs rw\n5 1 0:50 /b /srv/b rw shared:5 - tmpfs tmpfs rw\n"
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable + binds})
	w.send(mountEv(400, "kubelet", hostNS, "/data/a", "/srv/a", "", unix.MS_BIND, 0))
	w.send(mountEv(400, "kubelet", hostNS, "/data/b", "/srv/b", "", unix.MS_BIND, 0))
	w.send(unshareEv(20, "agent", hostNS, holderNS))
	w.proc.procs = append(w.proc.procs, proc(20, "agent", holderNS, ""))
	w.proc.tables[holderNS] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 0:50 /a /srv/a rw - tmpfs tmpfs rw\n" +
		"112 110 0:50 /b /srv/b rw shared:5 - tmpfs tmpfs rw\n"
	w.send(exitEv(21, "true", hostNS))
	w.proc.tables[hostNS] = hostTable + "5 1 0:50 /b /srv/b rw shared:5 - tmpfs tmpfs rw\n"
	w.send(umountEv(400, "kubelet", hostNS, "/srv/a", 0))
	leak := w.only()
	if leak.Kind != finding.KindLeak || leak.Object.Path != "/srv/a" {
		t.Fatalf("want the leak of /srv/a: %s", leak.Line())
	}
	// A process in the namespace works in its copy of /srv/b: the node's
	// unmount of /srv/b, which propagates to that copy, fails.
	w.proc.pins = []procfs.Pin{{Process: proc(20, "agent", holderNS, ""), Kind: procfs.PinCwd, Dev: event.MakeDev(0, 50), Path: "/srv/b"}}
	w.findings = nil
	w.send(umountEv(400, "kubelet", hostNS, "/srv/b", -int64(unix.EBUSY)))
	f := w.only()
	if f.Kind != finding.KindFailure || f.Object.Path != "/srv/b" {
		t.Fatalf("want the failure on /srv/b: %s", f.Line())
	}
	if f.Leak != nil {
		t.Errorf("the failure on /srv/b is linked to the leak of another directory (%s): %s", f.Leak.Summary, f.Line())
	}
}
