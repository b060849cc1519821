package privtest

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// TestKeepNamespaceFromANodeOnEachCPU: KeepNamespace succeeds from a node
// whatever CPU made the node's namespace (the kernel refuses the nsfs bind
// into a namespace with a larger id, and ids come in per-CPU batches:
// unpinned, a node made on CPU 1 failed about 9 binds in 10), and the
// namespace it returns is a new one.
func TestKeepNamespaceFromANodeOnEachCPU(t *testing.T) {
	Require(t)
	RequireCommands(t, "taskset", "unshare", "nsenter", "mount")
	own := MountNS(t, "self")
	for _, cpu := range allowedCPUs(t) {
		for round := 0; round < 3; round++ {
			t.Run("CPU "+strconv.Itoa(cpu)+" round "+strconv.Itoa(round), func(t *testing.T) {
				node := Node{startHolder(t, []string{"taskset", "-c", strconv.Itoa(cpu)}, "shared", "true", "sleep")}
				pins := Mkdir(t, filepath.Join(t.TempDir(), "pins"))
				node.Run(t, "mount", "--bind", pins, pins)
				node.Run(t, "mount", "--make-private", pins)
				file := filepath.Join(pins, "mnt")
				node.Run(t, "touch", file)
				kept := node.KeepNamespace(t, file)
				if kept == node.MntNS || kept == own {
					t.Errorf("kept mnt:[%d], the node's (%d) or the test's (%d)", kept, node.MntNS, own)
				}
			})
		}
	}
}
