package tracer

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"go.uber.org/zap/zaptest"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// walkPrograms are the programs that walk paths, by name.
func walkPrograms(o *objects) map[string]*ebpf.Program {
	return map[string]*ebpf.Program{
		"mount_exit":         o.mount.MountExit,
		"umount_exit":        o.mount.UmountExit,
		"pivot_root_exit":    o.mount.PivotRootExit,
		"open_tree_exit":     o.newmount.OpenTreeExit,
		"move_mount_exit":    o.newmount.MoveMountExit,
		"mount_setattr_exit": o.newmount.MountSetattrExit,
		"failure_exit":       o.failure.FailureExit,
	}
}

// verifierBudget is the most instructions the verifier processes for one
// program (BPF_COMPLEXITY_LIMIT_INSNS).
const verifierBudget = 1_000_000

var verificationTime = regexp.MustCompile(`verification time (\d+) usec`)

// TestLoadPathWalks loads the objects with each path walk and checks, in
// the programs as the verifier left them, that only the walk asked for is
// there: with the bounded walk no bpf_loop call is left (no_bpf_loop is a
// constant, so that branch is dead code the verifier removed), and the
// instructions the kernel got load no function address at all, as kernels
// before 5.13 require. It logs what each walk costs the verifier.
func TestLoadPathWalks(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "bpftool")
	if w, err := probePathWalk(); err != nil || w != WalkLoop {
		t.Fatalf("probePathWalk on this kernel = %s, %v; want bpf_loop", w, err)
	}
	for _, walk := range []PathWalk{WalkLoop, WalkBounded} {
		t.Run(walk.String(), func(t *testing.T) {
			start := time.Now()
			o, err := loadObjects(loadOptions{buffer: BufferRingbuf, ringBufBytes: 1 << 16, walk: walk, logStats: true}, zaptest.NewLogger(t))
			if err != nil {
				t.Fatal(err)
			}
			defer o.close()
			t.Logf("%s: all objects loaded in %v", walk, time.Since(start))
			var total uint64
			for name, prog := range walkPrograms(o) {
				dump := xlated(t, prog)
				calls := strings.Contains(dump, "call bpf_loop#")
				if walk == WalkBounded && calls {
					t.Errorf("%s: a call to bpf_loop is left in the bounded walk", name)
				}
				// The kernel inlines bpf_loop (5.19+): what is left of it is
				// a call to the callback, which the bounded loop makes too.
				if !calls && !strings.Contains(dump, walkCallback) {
					t.Errorf("%s: neither bpf_loop nor %s in the program", name, walkCallback)
				}
				info, err := prog.Info()
				if err != nil {
					t.Fatal(err)
				}
				n, _ := info.VerifiedInstructions()
				total += uint64(n)
				usec := "?"
				if m := verificationTime.FindStringSubmatch(prog.VerifierLog); m != nil {
					usec = m[1]
				}
				t.Logf("%s %s: %d instructions verified in %s µs", walk, name, n, usec)
				// Older verifiers prune less well: keep most of the budget.
				if n > verifierBudget/4 {
					t.Errorf("%s: %d instructions verified, more than a quarter of the verifier's %d", name, n, verifierBudget)
				}
			}
			t.Logf("%s: %d instructions verified in all", walk, total)
		})
	}
}
