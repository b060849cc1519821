package correlate_test

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestCreationChangesNoOtherTable holds the ledger's rule (a namespace's
// creation changes no table that exists: ownOnly) against the kernel: the
// mount tables of a shared node namespace and of a slave and a shared
// namespace copied from it read the same, byte for byte, before and after
// namespaces are created from each of them, shared, slave and private,
// and after one of those pivots its root.
func TestCreationChangesNoOtherTable(t *testing.T) {
	node := sharedTmpfsNode(t, "ownonly", "pivot_root")
	slave := node.StartHolder(t, "slave", "true")
	peer := node.StartHolder(t, "shared", "true")
	tables := func() [3]string {
		return [3]string{mountinfoText(t, node.PID), mountinfoText(t, slave.PID), mountinfoText(t, peer.PID)}
	}
	before := tables()
	for _, h := range []*privtest.Holder{node.Holder, slave, peer} {
		for _, propagation := range []string{"shared", "slave", "private"} {
			privtest.Run(t, "nsenter", "-t", strconv.Itoa(h.PID), "-m", "--", "unshare", "-m", "--propagation", propagation, "true")
		}
	}
	// A container's start: a namespace of its own, / made a slave, a new
	// root pivoted to.
	privtest.Run(t, "nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "unshare", "-m", "--propagation", "slave", "sh", "-c",
		"mount -t tmpfs newroot /mnt/new 2>/dev/null || { mkdir -p /mnt/new && mount -t tmpfs newroot /mnt/new; } && mount --make-private /mnt/new && mkdir /mnt/new/old && cd /mnt/new && pivot_root . old")
	after := tables()
	for i, name := range []string{"the node", "a slave of it", "a peer of it"} {
		if after[i] != before[i] {
			t.Errorf("%s's table changed:\nbefore\n%s\nafter\n%s", name, before[i], after[i])
		}
	}
}

// TestPrivateTableChangedOnlyByASuperblockRemount holds the ledger's rule
// for tables in no peer group (throughPropagation) against the kernel: a
// namespace whose mounts are all private reads the same, byte for byte,
// while the node it was copied from mounts, binds, changes propagation,
// moves, remounts a bind and unmounts (a slave of the node sees them); a
// superblock remount of a filesystem it has a mount of changes it.
func TestPrivateTableChangedOnlyByASuperblockRemount(t *testing.T) {
	node := sharedTmpfsNode(t, "privsb", "umount")
	node.Run(t, "mkdir", "/mnt/a", "/mnt/b", "/mnt/c")
	private := node.StartHolder(t, "private", "true")
	slave := node.StartHolder(t, "slave", "true")
	privateBefore, slaveBefore := mountinfoText(t, private.PID), mountinfoText(t, slave.PID)
	for _, args := range [][]string{
		{"mount", "-t", "tmpfs", "inner", "/mnt/a"},
		{"mount", "--bind", "/mnt/a", "/mnt/b"},
		{"mount", "--make-rprivate", "/mnt"},
		{"mount", "--move", "/mnt/b", "/mnt/c"},
		{"mount", "-o", "remount,bind,ro", "/mnt/c"},
		{"umount", "/mnt/c"},
	} {
		node.Run(t, args[0], args[1:]...)
		if got := mountinfoText(t, private.PID); got != privateBefore {
			t.Fatalf("after %s in the node, the private namespace's table changed:\nbefore\n%s\nafter\n%s", strings.Join(args, " "), privateBefore, got)
		}
	}
	if mountinfoText(t, slave.PID) == slaveBefore {
		t.Error("the node's slave saw none of it: the node changed nothing that propagates")
	}
	node.Run(t, "mount", "-o", "remount,size=2m", "/mnt")
	if mountinfoText(t, private.PID) == privateBefore {
		t.Error("a superblock remount of the node's /mnt left the private namespace's copy of it unchanged: the rule's exception is not needed")
	}
}

// sharedTmpfsNode is a node namespace of the test's own with a shared
// tmpfs (its source named source) at /mnt, for which the test needs the
// commands needs as well as those every such test does.
func sharedTmpfsNode(t *testing.T, source string, needs ...string) privtest.Node {
	t.Helper()
	privtest.Require(t)
	privtest.RequireCommands(t, append([]string{"unshare", "nsenter", "sh", "sleep", "mount"}, needs...)...)
	node := privtest.StartNode(t)
	node.Run(t, "mount", "-t", "tmpfs", source, "/mnt")
	node.Run(t, "mount", "--make-shared", "/mnt")
	return node
}

// mountinfoText is the kernel's mount table of pid's namespace, as text.
func mountinfoText(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
