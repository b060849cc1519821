package variants

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"

	"github.com/mntleak/mntleak/finding"
)

// TestOneLeakPerTeardown: a container's teardown unmounts its rootfs and
// a volume on the node; a private namespace made after they were mounted
// keeps both. Built for real: one leak finding names both objects (not one
// per unmount), with the namespace's process.
func TestOneLeakPerTeardown(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "sh", "sleep")
	dir := t.TempDir()
	rootfs := privtest.Mkdir(t, filepath.Join(dir, "rootfs"))
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	node := privtest.StartNode(t)
	l := startTracing(t)
	node.Run(t, "mount", "-t", "tmpfs", "overlay", rootfs)
	node.Run(t, "mount", "-t", "tmpfs", "volume", vol)
	h := node.StartHolder(t, "private", "true")
	l.holderSeen(t)
	node.Run(t, "sh", "-c", "umount "+rootfs+" && umount "+vol)
	privtest.AfterLeakSettle(t)
	l.caughtUp(t, 60*time.Second)
	var leaks []*finding.Finding
	for _, f := range append(l.about(rootfs, rootfs), l.about(vol, vol)...) {
		if f.Kind == finding.KindLeak {
			leaks = append(leaks, f)
		}
	}
	if len(leaks) != 1 {
		for _, f := range leaks {
			t.Log(f.Line())
		}
		t.Fatalf("%d leak findings, want one for the teardown", len(leaks))
	}
	f := leaks[0]
	check(t, f, finding.CauseUnshare, holder{pid: h.PID, ns: h.MntNS}, finding.RoleMember)
	// The volume leads, the rootfs follows (the objects a user cares
	// about first, whatever order the unmounts came in).
	if len(f.Others) != 1 || f.Object.Path != vol || f.Others[0].Path != rootfs {
		t.Errorf("want the leak of %s naming %s too:\n%s", vol, rootfs, f.Line())
	}
}
