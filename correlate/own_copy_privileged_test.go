package correlate_test

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestUmountRInAPrivateCopyOfAKubeletTree is
// TestUnmountInAPrivateCopyLeaksNothing on the kernel, with the real
// tracer and the live /proc: a kubelet-like tree (a shared tmpfs with a
// pod's token tmpfs under it) made before tracing; with tracing on, the
// node mounts something else, a private namespace is unshared from the
// node's, and umount -R of the tree runs in it (nsenter). The node keeps
// the tree. After the 2 s settle window and a flush, no finding is about
// the tree. It is a control on the kernel, not the reproducer: it passed
// without the fix too (twice: umount -R alone, then after a mount
// --make-private in the copy, as privtest's holders drop the node's
// mounts), the correlator not identifying the unmounted object from the
// copy's table there; TestUnmountInAPrivateCopyLeaksNothing reproduces.
func TestUmountRInAPrivateCopyOfAKubeletTree(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "umount")
	dir := t.TempDir()
	tree := privtest.Mkdir(t, filepath.Join(dir, "kubelet"))
	privtest.Mount(t, "mntleak-tree", tree, "tmpfs", 0, "size=1m")
	if err := unix.Mount("", tree, "", unix.MS_SHARED, ""); err != nil {
		t.Fatalf("make %s shared: %v", tree, err)
	}
	token := privtest.Mkdir(t, filepath.Join(tree, "pods", "u1", "volumes", "kubernetes.io~projected", "token"))
	privtest.Mount(t, "mntleak-token", token, "tmpfs", 0, "size=1m")

	x := startTraced(t, correlate.Options{LeakSettle: 2 * time.Second}, nil)

	later := privtest.Mkdir(t, filepath.Join(dir, "later"))
	privtest.Run(t, "mount", "-t", "tmpfs", "-o", "size=1m", "mntleak-later", later)
	t.Cleanup(func() { _ = unix.Unmount(later, unix.MNT_DETACH) })
	h := privtest.StartHolder(t, "private", "true")
	// As a test's holder drops the node's mounts: each made private, then
	// unmounted (the correlator reads the namespace's table at the first).
	privtest.Run(t, "nsenter", "-t", strconv.Itoa(h.PID), "-m", "--", "sh", "-c",
		"mount --make-private "+token+" && sleep 0.5 && umount -R "+tree)
	if ms, err := os.ReadFile("/proc/" + strconv.Itoa(h.PID) + "/mountinfo"); err != nil || strings.Contains(string(ms), " "+tree+" ") {
		t.Fatalf("the holder's namespace still has %s after umount -R (%v)", tree, err)
	}
	time.Sleep(2500 * time.Millisecond) // the leak settle window
	x.marker.CaughtUp(t, 2*time.Minute) // and the last events: a false leak has had them
	x.stop(t)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.lost > 0 {
		t.Logf("%d events lost: the verdict is checked all the same", x.lost)
	}
	for _, f := range x.findings {
		if strings.HasPrefix(f.Object.Path, tree) {
			t.Errorf("the private copy's own umount -R reported: %s", f.Line())
		}
	}
}
