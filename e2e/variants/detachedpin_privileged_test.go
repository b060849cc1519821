package variants

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mntleak/mntleak/e2e/findingset"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

// TestDetachedTmpfsPinnedFromTheNode: a tmpfs (no device: an anonymous
// 0:N) on the node, a private namespace that copied it, and a process of
// the node whose cwd (or open file) lies in that namespace's copy, reached
// through /proc/HOLDER/root. The node unmounts the tmpfs, then the holder
// exits: its namespace goes and the kernel detaches its copy, which the
// node's process keeps, and the tmpfs with its data with it. As for a
// block device (correlate TestDetachedWithItsNamespacePinnedElsewhere),
// the one leak finding names that process as the pinner, and the oracle
// finds the same detached copy.
func TestDetachedTmpfsPinnedFromTheNode(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "sh", "sleep")
	for _, tc := range []struct{ name, script string }{
		{"by a cwd", "cd ROOT && echo ready && exec sleep 600"},
		{"by an open file", "exec 3<ROOT/file && echo ready && exec sleep 600"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
			node := privtest.StartNode(t)
			l := startTracing(t)
			node.Run(t, "mount", "-t", "tmpfs", "detached-tmpfs", vol)
			node.Run(t, "sh", "-c", "echo data >"+vol+"/file")
			h := node.StartHolder(t, "private", "true")
			objs := objects{paths: []string{vol}}.withHolder(t, h)
			root := "/proc/" + strconv.Itoa(h.PID) + "/root" + vol
			pinner := run(t, exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "sh", "-c",
				strings.ReplaceAll(tc.script, "ROOT", root)))
			l.holderSeen(t)
			node.Run(t, "umount", vol)
			_ = h.Cmd.Process.Kill()
			_ = h.Cmd.Wait()
			waitGone(t, h.PID)
			privtest.AfterLeakSettle(t)
			l.settle(t, false)
			exactFindings(t, l.all(), objs, []expected{{kind: finding.KindLeak, syscall: "umount2", cause: finding.CauseUnshare,
				holder: holder{pid: pinner.Process.Pid, ns: node.MntNS, id: findingset.BirthID(t, node.PID)}, role: finding.RolePinner, fix: pinner.Process.Pid}})
			_ = l.about(vol, vol) // each checked against the oracle
			_ = syscall.Kill(pinner.Process.Pid, syscall.SIGKILL)
		})
	}
}
