package correlate_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// The reused-device tests' node: a pod's Memory emptyDir (tmpfs 0:39) at
// vol, and the pod's namespace agent, with a private copy of the kubelet
// root, so of the emptyDir.
const (
	agent      = 80
	vol        = "/var/lib/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/data"
	volHost    = hostTable + "40 1 0:39 / " + vol + " rw shared:40 - tmpfs tmpfs rw\n"
	agentRoot  = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 254:0 /var/lib/kubelet /host/kubelet rw - ext4 /dev/vda rw\n"
	agentTable = agentRoot + "112 111 0:39 / /host/kubelet/pods/u1/volumes/kubernetes.io~empty-dir/data rw - tmpfs tmpfs rw\n"
)

// TestReusedDeviceNumber: a tmpfs (a pod's Memory emptyDir) is unmounted
// while another namespace has a copy, which the kernel detaches a moment
// later; before the teardown settles, a failure hits a newer tmpfs that
// got the freed device number (measured on the e2e/k8snode node: another
// program's tmpfs took 0:39 within 200 ms and failed with EBUSY). That
// failure is not on the leaked filesystem: the leak is not confirmed by
// it, and once settled with nothing left, never reported. The same
// failure on the leaked tmpfs itself still confirms the leak at once.
func TestReusedDeviceNumber(t *testing.T) {
	const other = 90 // another program's namespace
	tests := []struct {
		name     string
		newer    bool // the failing tmpfs was mounted after the unmount
		wantLeak bool
	}{
		{"a newer tmpfs with the freed number fails", true, false},
		{"the leaked tmpfs fails", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
				map[uint32]string{hostNS: volHost})
			w.send(unshareEv(20, "runc:[2:INIT]", hostNS, agent))
			w.proc.procs = append(w.proc.procs, proc(20, "sleep", agent, ""))
			w.proc.tables[agent] = agentTable
			w.send(unshareEv(30, "unshare", hostNS, other))
			w.proc.procs = append(w.proc.procs, proc(30, "sleep", other, ""))
			w.proc.tables[other] = strings.Split(hostTable, "\n")[0] + "\n"
			w.send(exitEv(21, "true", agent))
			w.proc.tables[hostNS] = hostTable
			w.send(umountEv(40, "umount", hostNS, vol, 0))
			// The kubelet removes the directory: the copy is detached.
			w.proc.tables[agent] = agentRoot
			if tt.newer {
				const at = "/tmp/gone1"
				w.send(mountEv(31, "mount", other, "tmpfs", at, "tmpfs", 0, 0))
				w.proc.tables[other] += "120 110 0:39 / " + at + " rw - tmpfs tmpfs rw\n"
				w.proc.pins = []procfs.Pin{{Process: proc(30, "sleep", other, ""), Kind: procfs.PinCwd, Dev: event.MakeDev(0, 39), Path: at}}
				w.send(failEv(32, "umount", other, 166, at, int64(unix.EBUSY)))
			} else {
				// The copy is still there, and something fails on it.
				w.proc.tables[agent] = agentTable
				w.send(failEv(41, "rmdir", hostNS, 84, vol, int64(unix.EBUSY)))
				w.proc.tables[agent] = agentRoot
			}
			w.now = w.now.Add(3 * time.Second)
			w.send(exitEv(33, "true", hostNS))
			var leaks []*finding.Finding
			for _, f := range w.findings {
				if f.Kind == finding.KindLeak {
					leaks = append(leaks, f)
				}
			}
			if got := len(leaks) == 1 && leaks[0].Object.Path == vol; got != tt.wantLeak || len(leaks) > 1 {
				for _, f := range w.findings {
					t.Log(f.Line())
				}
				t.Fatalf("%d leak findings, want the leak of %s: %v", len(leaks), vol, tt.wantLeak)
			}
		})
	}
}

// TestDeviceNumberReusedInTheHoldersNamespace: the emptyDir is unmounted
// while the pod's namespace has a copy, which the kernel detaches a moment
// later; before the teardown settles, the pod mounts a new tmpfs at
// /scratch that gets the freed device number. It is another filesystem
// (a mount the table the copy was found in did not have): no leak.
func TestDeviceNumberReusedInTheHoldersNamespace(t *testing.T) {
	w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
		map[uint32]string{hostNS: volHost})
	w.send(unshareEv(20, "runc:[2:INIT]", hostNS, agent))
	w.proc.procs = append(w.proc.procs, proc(20, "sleep", agent, ""))
	w.proc.tables[agent] = agentTable
	w.send(exitEv(21, "true", agent))
	w.proc.tables[hostNS] = hostTable
	w.send(umountEv(40, "umount", hostNS, vol, 0))
	w.proc.tables[agent] = agentRoot + "130 110 0:39 / /scratch rw - tmpfs tmpfs rw\n"
	w.send(mountEv(22, "mount", agent, "tmpfs", "/scratch", "tmpfs", 0, 0))
	w.now = w.now.Add(3 * time.Second)
	w.send(exitEv(33, "true", hostNS))
	for _, f := range w.findings {
		t.Errorf("want no finding, got: %s", f.Line())
	}
}

// TestDetachedCopysNumberReusedWhereThePinIs: the holder's copy of the
// node's tmpfs went with its namespace, and before the teardown settled
// another namespace mounted a new tmpfs that got the freed number 0:40,
// with a process's cwd in it (CI, full run: the tmpfs of cmd's
// TestJournalGoneAndBack took the number of seed004's merged, and its
// sleep's cwd was taken for a process keeping the detached copy: a leak
// the kernel's oracle refuted). That namespace's table, read before its
// mount, did not show the device: read again, it does, so the pin is that
// mount's, not a detached copy's: no leak. The control: the pinner's
// namespace has no such mount (it reached the copy through the holder's
// root before the holder went): the leak names the pinner.
func TestDetachedCopysNumberReusedWhereThePinIs(t *testing.T) {
	const other = 81
	const otherRoot = "120 119 254:0 / / rw - ext4 /dev/vda rw\n"
	for _, reused := range []bool{true, false} {
		t.Run(fmt.Sprintf("the number reused there %v", reused), func(t *testing.T) {
			w := tmpfsHolderWorld(t, correlate.Options{LeakSettle: 2 * time.Second}, 0)
			w.send(unshareEv(30, "app", hostNS, other))
			w.proc.procs = append(w.proc.procs, proc(30, "app", other, ""))
			w.proc.tables[other] = otherRoot
			w.send(exitEv(91, "true", hostNS)) // the tables are read
			sleeper := proc(61, "sleep", other, "")
			w.proc.procs = append(w.proc.procs, sleeper)
			w.proc.pins = []procfs.Pin{{Process: sleeper, Kind: procfs.PinCwd, Dev: event.MakeDev(0, 40), Path: "/mnt/reused"}}
			w.proc.tables[hostNS] = "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n"
			w.send(umountEv(40, "umount", hostNS, "/srv/vol", 0))
			holderGone(w)
			w.send(exitEv(20, "holder", tmpfsHolderNS))
			if reused {
				w.proc.tables[other] = otherRoot + "121 120 0:40 / /mnt/reused rw - tmpfs reused rw\n"
				w.send(mountEv(30, "app", other, "reused", "/mnt/reused", "tmpfs", 0, 0))
			}
			w.now = w.now.Add(2 * time.Second)
			w.send(exitEv(90, "true", hostNS))
			if reused {
				for _, f := range w.findings {
					t.Errorf("want no finding, got:\n%s", f.Line())
				}
				return
			}
			f := w.only()
			if _, a := f.Actor(); f.Kind != finding.KindLeak || a == nil || a.PID != 61 || a.Role != finding.RolePinner {
				t.Errorf("want a leak naming the pinner sleep[61]:\n%s", f.Line())
			}
		})
	}
}
