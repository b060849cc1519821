package correlate_test

import (
	"os"
	"strconv"
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
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "sh", "sleep", "mount", "pivot_root")
	node := privtest.StartNode(t)
	node.Run(t, "mount", "-t", "tmpfs", "ownonly", "/mnt")
	node.Run(t, "mount", "--make-shared", "/mnt")
	slave := node.StartHolder(t, "slave", "true")
	peer := node.StartHolder(t, "shared", "true")
	tables := func() [3]string {
		var out [3]string
		for i, pid := range []int{node.PID, slave.PID, peer.PID} {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/mountinfo")
			if err != nil {
				t.Fatal(err)
			}
			out[i] = string(b)
		}
		return out
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
