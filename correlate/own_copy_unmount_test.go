package correlate_test

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// A node's kubelet tree: its root bound on itself (shared) and a pod's
// token tmpfs under it.
const (
	kubeletTree = "/var/lib/kubelet"
	podToken    = kubeletTree + "/pods/u1/volumes/kubernetes.io~projected/kube-api-access-x"
	nodeKubelet = "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n" +
		"60 1 254:0 /var/lib/kubelet /var/lib/kubelet rw shared:5 - ext4 /dev/vda rw\n"
	nodeToken = "61 60 0:50 / " + podToken + " rw shared:6 - tmpfs tmpfs rw\n"
	// a private copy of it, in a namespace unshared from the node's
	copyRoot    = "200 199 254:0 / / rw - ext4 /dev/vda rw\n"
	copyKubelet = "201 200 254:0 /var/lib/kubelet /var/lib/kubelet rw - ext4 /dev/vda rw\n"
	copyToken   = "202 201 0:50 / " + podToken + " rw - tmpfs tmpfs rw\n"
	// a pod's namespace made after the token's mount, a slave of the node
	podRoot = "300 299 254:0 / / rw master:1 - ext4 /dev/vda rw\n" +
		"301 300 254:0 /var/lib/kubelet /var/lib/kubelet rw master:5 - ext4 /dev/vda rw\n"
	podToken2 = "302 301 0:50 / " + podToken + " rw master:6 - tmpfs tmpfs rw\n"
)

// TestUnmountInAPrivateCopyLeaksNothing: a test unshares a private copy of
// the node's namespace and runs umount -R of /var/lib/kubelet in it (the
// token tmpfs, then the kubelet's root): it unmounts its own copies while
// the node keeps its mounts, which the copy was made from. That is no
// leak, and no finding (seen on the node: a MountLeaked, cause unshare,
// naming the node as the holder of a pod's token), nor from a pod made
// since whose slave copy receives the node's unmounts. Whether the node's
// mount predates tracing or tracing saw it (and the node mounted other
// things since), there is none after the settle window and a flush. The
// control: the node's own unmount of the token, the copy keeping it, is
// the unshare leak.
func TestUnmountInAPrivateCopyLeaksNothing(t *testing.T) {
	const copyNS, podNS = 70, 80
	tests := []struct {
		name      string
		seen      bool // tracing saw the kubelet mount the token
		nodeLater bool // the node mounted something else after that
		control   bool // the node unmounts the token, not the copy
	}{
		{name: "the node's mounts predate tracing"},
		{name: "the node's mounts predate tracing, the node mounting since", nodeLater: true},
		{name: "tracing saw the token mounted, the node mounting since", seen: true, nodeLater: true},
		{name: "control: the node unmounts, the copy keeps it", seen: true, control: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := newWorldOpts(t, correlate.Options{LeakSettle: 2 * time.Second},
				[]procfs.Process{proc(1, "init", hostNS, ""), proc(100, "kubelet", hostNS, "")},
				map[uint32]string{hostNS: nodeKubelet})
			if tt.seen {
				w.proc.tables[hostNS] = nodeKubelet + nodeToken
				w.send(mountEv(100, "kubelet", hostNS, "tmpfs", podToken, "tmpfs", 0, 0))
				w.send(exitEv(101, "true", hostNS))
			} else {
				w.proc.tables[hostNS] = nodeKubelet + nodeToken
				w.send(exitEv(101, "true", hostNS))
			}
			// A pod made since, whose copy receives the node's unmounts.
			w.proc.tables[podNS] = podRoot + podToken2
			w.proc.procs = append(w.proc.procs, proc(700, "pause", podNS, ""))
			w.send(unshareEv(700, "runc", hostNS, podNS))
			w.send(mountEv(700, "runc", podNS, "none", "/", "", unix.MS_REC|unix.MS_SLAVE, 0))
			w.proc.tables[copyNS] = copyRoot + copyKubelet + copyToken
			w.proc.procs = append(w.proc.procs, proc(500, "sh", copyNS, ""))
			w.send(unshareEv(500, "unshare", hostNS, copyNS))
			// unshare --propagation private
			w.send(mountEv(500, "unshare", copyNS, "none", "/", "", unix.MS_REC|unix.MS_PRIVATE, 0))
			if tt.nodeLater {
				w.proc.tables[hostNS] += "62 1 0:51 / /mnt/later rw shared:7 - tmpfs tmpfs rw\n"
				w.send(mountEv(100, "kubelet", hostNS, "tmpfs", "/mnt/later", "tmpfs", 0, 0))
			}
			if tt.control {
				w.proc.tables[hostNS] = nodeKubelet
				w.proc.tables[podNS] = podRoot
				w.send(umountEv(100, "kubelet", hostNS, podToken, 0))
			} else {
				w.proc.tables[copyNS] = copyRoot + copyKubelet
				w.send(umountEv(502, "umount", copyNS, podToken, 0))
				w.proc.tables[copyNS] = copyRoot
				w.send(umountEv(502, "umount", copyNS, kubeletTree, 0))
			}
			for i := 0; i < 12; i++ { // 2.4 s: past the settle window
				w.send(exitEv(600+i, "true", hostNS))
			}
			w.c.Flush()
			if tt.control {
				f := w.only()
				if f.Kind != finding.KindLeak || f.Cause != finding.CauseUnshare || len(f.Holders) != 1 || f.Holders[0].MntNS != copyNS {
					t.Errorf("want the unshare leak held in mnt:[%d]: %s", copyNS, f.Line())
				}
				return
			}
			for _, f := range w.findings {
				t.Errorf("the copy's own unmount reported: %s", f.Line())
			}
		})
	}
}
