package correlate_test

import (
	"testing"
	"time"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// A pod's teardown that leaves the sandbox's shm and the pod's emptyDir
// in one holder namespace is one leak that leads with the pod's volume
// (the runtime unmounts the shm first; the finding led with it and the
// volume was "1 more"), then the rootfs, then the runtime's internals.
func TestLeakLeadsWithThePodVolume(t *testing.T) {
	const other = 80
	const (
		shm    = "/run/containerd/io.containerd.grpc.v1.cri/sandboxes/5c1e9a0b/shm"
		rootfs = "/run/containerd/io.containerd.runtime.v2.task/k8s.io/9f2d7c1a/rootfs"
		vol    = "/var/lib/kubelet/pods/0f6d1c2e-8b3a-4e5f-9a7b-1c2d3e4f5a6b/volumes/kubernetes.io~empty-dir/cache"
	)
	mounts := "5 1 0:51 / " + shm + " rw shared:5 - tmpfs shm rw\n" +
		"6 1 0:52 / " + rootfs + " rw shared:6 - overlay overlay rw\n" +
		"7 1 0:53 / " + vol + " rw shared:7 - tmpfs tmpfs rw\n"
	w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second}, []procfs.Process{proc(1, "systemd", hostNS, "")},
		map[uint32]string{hostNS: hostTable + mounts})
	w.send(unshareEv(20, "agent", hostNS, other))
	w.proc.procs = append(w.proc.procs, proc(20, "agent", other, ""))
	w.proc.tables[other] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n" +
		"111 110 0:51 / " + shm + " rw - tmpfs shm rw\n" +
		"112 110 0:52 / " + rootfs + " rw - overlay overlay rw\n" +
		"113 110 0:53 / " + vol + " rw - tmpfs tmpfs rw\n"
	w.send(exitEv(21, "true", other))
	w.proc.tables[hostNS] = hostTable
	w.send(umountEv(40, "containerd", hostNS, shm, 0), umountEv(40, "containerd", hostNS, rootfs, 0),
		umountEv(41, "kubelet", hostNS, vol, 0))
	w.now = w.now.Add(3 * time.Second)
	w.c.Flush()
	if len(w.findings) != 1 {
		for _, f := range w.findings {
			t.Log(f.Line())
		}
		t.Fatalf("%d findings, want one leak", len(w.findings))
	}
	f := w.findings[0]
	if f.Kind != finding.KindLeak || f.Object.Path != vol || len(f.Others) != 2 || f.Others[0].Path != rootfs || f.Others[1].Path != shm {
		t.Errorf("want a leak leading with %s, then %s and %s:\n%s", vol, rootfs, shm, f.Line())
	}
}
