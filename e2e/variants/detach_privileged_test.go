package variants

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"

	"github.com/mntleak/mntleak/finding"
)

// TestDetachedCopies: a successful rmdir of a mountpoint detaches its
// copies in every namespace (6.x) and makes no event. Built for real: a
// device mounted twice on the node, an older private namespace that copied
// the first mount only, a younger one that copied both; the node unmounts
// both (two leaks, confirmed once settled), removes the first directory
// (the kernel detaches both copies there), and then mkfs.ext4 fails. The
// failure must name the younger namespace's copy, never the detached one
// of the older namespace, nor its process; when the older copy is still
// pinned by a cwd, it is named as detached, with that process.
func TestDetachedCopies(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "mkfs.ext4", "losetup", "rmdir", "sh", "sleep")
	for _, pinned := range []bool{false, true} {
		name := "the older copy is gone"
		if pinned {
			name = "the older copy is pinned by a cwd"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			dev := privtest.LoopDevice(t, 8)
			vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
			vol2 := privtest.Mkdir(t, filepath.Join(dir, "vol2"))
			node := privtest.StartNode(t)
			l := startTracing(t)
			node.Run(t, "mount", dev, vol)
			script := "true"
			if pinned {
				script = "cd " + vol
			}
			older := node.StartHolder(t, "private", script)
			node.Run(t, "mount", dev, vol2)
			younger := node.StartHolder(t, "private", "true")
			l.holderSeen(t)
			node.Run(t, "umount", vol)
			node.Run(t, "umount", vol2)
			privtest.AfterLeakSettle(t)
			if l.wait(dev, vol, 3*time.Second, func(f *finding.Finding) bool { return f.Kind == finding.KindLeak }) == nil {
				t.Fatalf("no leak finding for %s", vol)
			}
			node.Run(t, "rmdir", vol) // detaches the copies at vol, in both namespaces
			time.Sleep(300 * time.Millisecond)
			mkfs := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", dev)
			if err := mkfs.Run(); err == nil {
				t.Fatal("mkfs.ext4 succeeded on a device a private copy keeps mounted")
			}
			f := l.wait(dev, vol, 5*time.Second, func(f *finding.Finding) bool {
				return f.Kind == finding.KindFailure && f.Call.Syscall == "openat"
			})
			check(t, f, finding.CauseUnshare, holder{pid: younger.PID, ns: younger.MntNS}, finding.RoleMember)
			if f == nil {
				return
			}
			for _, h := range f.Holders {
				if h.Where == vol {
					t.Errorf("cites the copy at %s the kernel detached:\n%s", vol, f.Line())
				}
			}
			want := "mnt:[" + strconv.Itoa(int(older.MntNS)) + "]"
			switch {
			case !pinned && strings.Contains(f.Line(), want):
				t.Errorf("names %s, whose copy is gone:\n%s", want, f.Line())
			case pinned && !strings.Contains(f.Line(), "kept busy in "+want+", whose copy the kernel detached, held by sleep["+strconv.Itoa(older.PID)+"] cwd"):
				t.Errorf("does not name the detached copy in %s and its pinner sleep[%d]:\n%s", want, older.PID, f.Line())
			}
		})
	}
}
