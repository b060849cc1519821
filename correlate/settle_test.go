package correlate_test

import (
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// A leak is reported once the teardown has settled: on 6.x kernels the
// runtime's rmdir right after the unmount detaches the copies in other
// namespaces, and a copy the kernel detached that nothing pins is no leak.
func TestLeakSettles(t *testing.T) {
	const other = 80
	copyTable := "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	tests := []struct {
		name     string
		detached bool // the kernel detaches the copy right after the unmount
		pinned   bool // the holder's process keeps the copy busy (its cwd)
		pinsErr  error
		then     func(w *world)
		want     []finding.FindingKind
	}{
		{"the copy is detached a moment later", true, false, nil, func(w *world) { w.send(exitEv(90, "true", hostNS)) }, nil},
		{"the copy stays", false, false, nil, func(w *world) { w.send(exitEv(90, "true", hostNS)) }, []finding.FindingKind{finding.KindLeak}},
		{"a failure on it before the teardown settled", false, false, nil, func(w *world) {
			w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
		}, []finding.FindingKind{finding.KindLeak, finding.KindFailure}},
		{"the events end before it settled", false, false, nil, func(w *world) { w.c.Flush() }, []finding.FindingKind{finding.KindLeak}},
		{"the events end, the copy detached", true, false, nil, func(w *world) { w.c.Flush() }, nil},
		{"the copy is detached, a process keeps it busy", true, true, nil, func(w *world) { w.send(exitEv(90, "true", hostNS)) },
			[]finding.FindingKind{finding.KindLeak}},
		// Even root cannot read every process (this machine's PID 1): the
		// pins of the others still count.
		{"the copy is detached, a process keeps it busy, another cannot be read", true, true, &procfs.UnreadableError{Processes: 1},
			func(w *world) { w.send(exitEv(90, "true", hostNS)) }, []finding.FindingKind{finding.KindLeak}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
				map[uint32]string{hostNS: hostTable})
			w.send(unshareEv(20, "agent", hostNS, other))
			w.proc.procs = append(w.proc.procs, proc(20, "agent", other, ""))
			w.proc.tables[other] = copyTable
			w.send(exitEv(21, "true", other))
			w.proc.tables[hostNS] = hostWithoutVol
			w.send(umountEv(40, "containerd", hostNS, "/srv/vol", 0))
			if len(w.findings) != 0 {
				t.Fatalf("leak reported before the teardown settled: %s", w.findings[0].Line())
			}
			if tt.detached {
				w.proc.tables[other] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n"
			}
			if tt.pinned {
				w.proc.pins = []procfs.Pin{{Process: proc(20, "agent", other, ""), Kind: procfs.PinCwd, Dev: event.MakeDev(7, 0), Path: "/srv/vol"}}
			}
			w.proc.pinsErr = tt.pinsErr
			w.now = w.now.Add(3 * time.Second)
			tt.then(w)
			if len(w.findings) != len(tt.want) {
				for _, f := range w.findings {
					t.Log(f.Line())
				}
				t.Fatalf("%d findings, want %v", len(w.findings), tt.want)
			}
			for i, k := range tt.want {
				if w.findings[i].Kind != k {
					t.Errorf("finding %d is a %s, want %s", i, w.findings[i].Kind, k)
				}
			}
			if n := len(tt.want); n == 2 && w.findings[1].Leak == nil {
				t.Errorf("the failure does not link to the leak: %s", w.findings[1].Line())
			}
		})
	}
}

// A teardown that leaves several copies in one holder namespace (a pod's
// rootfs, its volumes) is one leak finding naming every object it keeps,
// not one per unmount; a failure on any of them links to it.
func TestOneLeakPerTeardown(t *testing.T) {
	w := teardownWorld(t)
	w.send(umountEv(40, "containerd", hostNS, "/srv/vol", 0), umountEv(40, "containerd", hostNS, "/srv/rootfs", 0))
	w.now = w.now.Add(3 * time.Second)
	w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
	if len(w.findings) != 2 {
		for _, f := range w.findings {
			t.Log(f.Line())
		}
		t.Fatalf("%d findings, want one leak and the failure", len(w.findings))
	}
	leak, fail := w.findings[0], w.findings[1]
	if leak.Kind != finding.KindLeak || len(leak.Others) != 1 || leak.Others[0].Path != "/srv/rootfs" ||
		!strings.Contains(leak.Line(), "LEAK /srv/vol (7:0) and 1 more of the same teardown (/srv/rootfs (0:50)) unmounted by containerd[40]") {
		t.Errorf("want one leak naming /srv/vol and /srv/rootfs: %s", leak.Line())
	}
	if fail.Kind != finding.KindFailure || fail.Leak == nil {
		t.Errorf("the failure does not link to the leak: %s", fail.Line())
	}
}

// The correlator runs behind the kernel: a holder's table may be re-read,
// for an event queued before the unmount, after the unmount and the rmdir
// that detached its copy. The copy the table read before that showed is
// still the one the unmount leaked, and a process keeps it busy.
func TestLeakDetachedBeforeItsUnmountIsRead(t *testing.T) {
	const other = 80
	copyTable := "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n"
	detached := "110 109 254:0 / / rw - ext4 /dev/vda rw\n"
	for _, tc := range []struct {
		name   string
		pinned bool
		want   int
	}{
		{"a process keeps the detached copy busy", true, 1},
		{"nothing keeps it", false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
				map[uint32]string{hostNS: hostTable})
			w.send(unshareEv(20, "agent", hostNS, other))
			w.proc.procs = append(w.proc.procs, proc(20, "agent", other, ""))
			w.proc.tables[other] = copyTable
			w.send(exitEv(21, "true", other))
			// The kernel: unmount on the host, the rmdir detaches the copy.
			w.proc.tables[hostNS] = hostWithoutVol
			w.proc.tables[other] = detached
			if tc.pinned {
				w.proc.pins = []procfs.Pin{{Process: proc(20, "agent", other, ""), Kind: procfs.PinCwd, Dev: event.MakeDev(7, 0), Path: "/srv/vol"}}
			}
			// An event queued before the unmount has the tables re-read.
			w.send(mountEv(30, "mount", other, "tmpfs", "/run/x", "tmpfs", 0, 0), exitEv(31, "true", other))
			w.send(umountEv(40, "containerd", hostNS, "/srv/vol", 0))
			w.now = w.now.Add(3 * time.Second)
			w.send(exitEv(90, "true", hostNS))
			if len(w.findings) != tc.want {
				for _, f := range w.findings {
					t.Log(f.Line())
				}
				t.Fatalf("%d findings, want %d", len(w.findings), tc.want)
			}
			if tc.want == 1 && (w.findings[0].Kind != finding.KindLeak || len(w.findings[0].Holders) != 1 || !w.findings[0].Holders[0].Detached) {
				t.Errorf("want a leak with the detached copy as its holder: %s", w.findings[0].Line())
			}
		})
	}
}

// teardownWorld is a node with /srv/vol (7:0) and /srv/rootfs (0:50)
// mounted, a private namespace (mnt:[80], agent[20]) made with copies of
// both, and the node's table read after it unmounted them.
func teardownWorld(t *testing.T) *world {
	const other = 80
	w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
		map[uint32]string{hostNS: hostTable + "5 1 0:50 / /srv/rootfs rw shared:5 - tmpfs overlay rw\n"})
	w.send(unshareEv(20, "agent", hostNS, other))
	w.proc.procs = append(w.proc.procs, proc(20, "agent", other, ""))
	w.proc.tables[other] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 7:0 / /srv/vol rw - ext4 /dev/loop0 rw\n112 110 0:50 / /srv/rootfs rw - tmpfs overlay rw\n"
	w.send(exitEv(21, "true", other))
	w.proc.tables[hostNS] = hostWithoutVol
	return w
}
