package k8snode_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestControls (issue 15, scenario 3): pod create/delete churn leaves
// nothing mounted, on its own, with a host process sitting in a private
// mount namespace with slave propagation (as a PrivateTmp= service), and
// with a privileged pod holding hostPath /var/lib/kubelet with
// mountPropagation None (the kernel detaches its copies).
func TestControls(t *testing.T) {
	const pods = 5
	n := k8snode.Up(t)
	for _, tc := range []struct {
		name string
		// before starts what the churn runs beside, after the workloads run
		// (a copy is only made of what is mounted then); it returns the pid
		// whose namespace must end with no copy of theirs, or 0.
		before func(t *testing.T) int
	}{
		{"churn", func(*testing.T) int { return 0 }},
		{"private-namespace-process", func(t *testing.T) int {
			return privtest.StartHolder(t, "slave", "true").PID
		}},
		{"kubelet-hostpath-none", func(t *testing.T) int {
			h := k8snode.KubeletHostPathPod(ns, "s3-hostpath")
			n.Apply(t, h.Manifest)
			n.WaitPodRunning(t, ns, h.Name)
			return n.ContainerPID(t, ns, h.Name, "main")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var works []k8snode.Workload
			for i := range pods {
				w := k8snode.MemoryEmptyDirPod(ns, fmt.Sprintf("s3-%s-%d", tc.name, i))
				n.Apply(t, w.Manifest)
				works = append(works, w)
			}
			uids := map[string]string{}
			for _, w := range works {
				uids[w.Name] = n.WaitPodRunning(t, ns, w.Name).UID
			}
			holder := tc.before(t)
			if holder != 0 {
				// The holder's namespace did copy the workloads' volumes.
				for _, w := range works {
					at := w.HostDir(uids[w.Name])
					if tc.name == "kubelet-hostpath-none" {
						at = "/host/kubelet" + strings.TrimPrefix(at, k8snode.KubeletRoot)
					}
					if ms, err := k8snode.MountsUnder(holder, at); err != nil || len(ms) != 1 {
						t.Fatalf("pid %d: mounts at %s: %v (%v), want a copy of %s's tmpfs", holder, at, ms, err, w.Name)
					}
				}
			}
			for _, w := range works {
				if _, err := n.KubectlErr(nil, "delete", "pod", "-n", ns, w.Name, "--wait=false"); err != nil {
					t.Fatal(err)
				}
			}
			for _, w := range works {
				if n.DeletePod(t, ns, w.Name, true) {
					t.Errorf("pod %s/%s stuck after its deletion", ns, w.Name)
				}
				nothingNaming(t, w.Name, uids[w.Name])
			}
		})
	}
}
