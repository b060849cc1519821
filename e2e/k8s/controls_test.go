package k8s

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// TestControls (issue 15, scenario 3): pods with Memory emptyDirs created
// and deleted on the node leave nothing behind, on their own, beside a
// host process sitting in a private mount namespace with slave propagation
// (as a PrivateTmp=yes service does), and beside a privileged pod holding
// hostPath /var/lib/kubelet with mountPropagation None (the kernel
// detaches its copies): mntleak reports no finding about any of them and
// posts no Event.
func TestControls(t *testing.T) {
	const pods = 5
	for _, tc := range []struct {
		name string
		// beside starts what the churn runs beside, once the workloads run
		// (a copy is made only of what is mounted then); it returns the
		// pids and pod UIDs a finding would name, and the pods it applied.
		beside func(t *testing.T, l *lab) ([]int, []string, []k8snode.Manifest)
	}{
		{"churn", func(*testing.T, *lab) ([]int, []string, []k8snode.Manifest) { return nil, nil, nil }},
		{"private-namespace-process", func(t *testing.T, _ *lab) ([]int, []string, []k8snode.Manifest) {
			return []int{privtest.StartHolder(t, "slave", "true").PID}, nil, nil
		}},
		{"kubelet-hostpath-none", func(t *testing.T, l *lab) ([]int, []string, []k8snode.Manifest) {
			h := k8snode.KubeletHostPathPod("monitoring", "node-agent")
			l.n.Apply(t, h.Manifest)
			p := l.n.WaitPodRunning(t, "monitoring", h.Name)
			return []int{l.n.ContainerPID(t, "monitoring", h.Name, "main")}, []string{p.UID}, []k8snode.Manifest{h.Manifest}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := setup(t, "shop", "monitoring")
			n := l.n
			var works []k8snode.Workload
			for i := range pods {
				w := k8snode.MemoryEmptyDirPod("shop", fmt.Sprintf("web-%d", i))
				n.Apply(t, w.Manifest)
				works = append(works, w)
			}
			var uids []string
			for _, w := range works {
				uids = append(uids, n.WaitPodRunning(t, "shop", w.Name).UID)
			}
			pids, more, manifests := tc.beside(t, l)
			uids = append(uids, more...)
			// What their namespaces copied when they were made.
			copied := map[int][]*procfs.Mount{}
			for _, pid := range pids {
				ms, err := k8snode.MountsUnder(pid, "") // all of them
				if err != nil {
					t.Fatal(err)
				}
				copied[pid] = ms
			}
			for _, w := range works {
				if _, err := n.KubectlErr(nil, "delete", "pod", "-n", "shop", w.Name, "--wait=false"); err != nil {
					t.Fatal(err)
				}
			}
			for _, w := range works {
				if n.DeletePod(t, "shop", w.Name, true) {
					t.Errorf("pod shop/%s stuck after its deletion", w.Name)
				}
			}
			privtest.AfterLeakSettle(t)
			l.m.waitFindings(t, enrichWait, 1, func(f logged) bool { return isAbout(f, uids, pids...) })
			r := &run{
				manifests: append([]k8snode.Manifest{works[0].Manifest}, manifests...),
				also:      fmt.Sprintf("web-1 to web-%d are web-0 but for their names", pods-1),
				commands: [][]string{
					{"get", "events", "-n", "shop", "--field-selector", "type=Warning"},
					{"get", "events", "-n", "monitoring", "--field-selector", "type=Warning"},
				},
			}
			for _, f := range about(l.m.findings(t), uids, pids...) {
				if f.StuckPodUID != "" || f.HolderPod != "" || strings.HasPrefix(f.Path, k8snode.KubeletRoot+"/") {
					t.Errorf("finding about the pods: %s", f.Raw)
					continue
				}
				r.others = append(r.others, f)
				// Not about the pods' volumes: a copy of the runtime's own
				// mounts (this machine's / is private, so a namespace made
				// from the host keeps private copies of them, which no
				// unmount reaches). It must be true: the namespace copied
				// the mount, privately, when it was made.
				if err := privateCopy(f, copied); err != nil {
					t.Errorf("false leak (%v): %s", err, f.Raw)
				} else {
					t.Logf("a private copy of the runtime's mount: %s", f.Msg)
				}
			}
			for _, ns := range []string{"shop", "monitoring"} {
				for _, e := range l.mntleakEvents(t, ns) {
					t.Errorf("Event of mntleak in %s: %s %s on %s: %s", ns, e.Type, e.Reason, e.Regarding.Name, e.Note)
				}
			}
			r.write(t, l, tc.name)
			l.m.Stop(t)
		})
	}
}

// privateCopy checks a leak finding that is not about the pods against
// what the kernel showed when the holder's namespace was made (copied: by
// pid): the holder is one of those processes, and its namespace copied
// the object's mount where the finding says, private, so that no unmount
// elsewhere could reach it.
func privateCopy(f logged, copied map[int][]*procfs.Mount) error {
	h, a := f.Detail.Actor()
	if h == nil || a == nil || f.Finding != string(finding.KindLeak) {
		return fmt.Errorf("not a leak with a holding process")
	}
	ms, ok := copied[a.PID]
	if !ok {
		return fmt.Errorf("the holder %d is none of the test's processes", a.PID)
	}
	for _, m := range ms {
		if m.Mountpoint == h.Where && event.MakeDev(uint32(m.Major), uint32(m.Minor)) == f.Detail.Object.Dev {
			if m.Optional != "" {
				return fmt.Errorf("pid %d's copy at %s is %s, not private", a.PID, h.Where, m.Optional)
			}
			return nil
		}
	}
	return fmt.Errorf("pid %d's namespace had no mount of %s at %s when it was made", a.PID, f.Detail.Object.Dev, h.Where)
}
