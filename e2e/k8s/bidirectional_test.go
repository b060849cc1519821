package k8s

import (
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/sink/kubeevents"
	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/mntleak/mntleak/e2e/findingset"
)

// TestBidirectional (issue 15, scenario 1): a privileged pod with a
// Bidirectional hostPath of the kubelet root (storage/csi-node) mounts a
// tmpfs inside another pod's volume (shop/web); web is deleted and stays,
// its deletionTimestamp set, while the kubelet's unlinkat fails with
// EBUSY. mntleak names web as the stuck pod with its volume, csi-node
// (container main, its process) as the holder, the mount made in
// csi-node's namespace as the leaking event, and posts a MountBusy Event
// on web related to csi-node. Beside a peer (another Bidirectional pod,
// started before the mount, which the mount reaches too) the holder is
// still the pod that made the mount.
func TestBidirectional(t *testing.T) {
	for _, tc := range []struct {
		name string
		peer bool
	}{
		{"bidirectional", false},
		{"bidirectional-beside-a-peer", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := setup(t, "shop", "storage")
			n := l.n
			r := &run{}
			victim := k8snode.EmptyDirPod("shop", "web")
			n.Apply(t, victim.Manifest)
			web := n.WaitPodRunning(t, "shop", victim.Name)
			uids := []string{web.UID}
			var pids []int
			if tc.peer {
				peer := k8snode.BidirectionalPod("storage", "csi-other")
				n.Apply(t, peer)
				uids = append(uids, n.WaitPodRunning(t, "storage", peer.Name).UID)
				pids = append(pids, n.ContainerPID(t, "storage", peer.Name, "main"))
				r.manifests = append(r.manifests, peer)
			}
			mounter := k8snode.BidirectionalMounter("storage", "csi-node", victim, web.UID)
			// Runs before web's cleanup: a test stopped half-way leaves no
			// stuck pod.
			t.Cleanup(func() { _ = unix.Unmount(mounter.HostPath, unix.MNT_DETACH) })
			n.Apply(t, mounter.Manifest)
			r.manifests = append([]k8snode.Manifest{victim.Manifest}, append(r.manifests, mounter.Manifest)...)
			csi := n.WaitPodRunning(t, "storage", mounter.Name)
			holderPID := n.ContainerPID(t, "storage", mounter.Name, "main")
			uids, pids = append(uids, csi.UID), append(pids, holderPID)
			holderNS, err := k8snode.MountNS(holderPID)
			if err != nil {
				t.Fatal(err)
			}
			privtest.WaitFor(t, 20*time.Second, "tmpfs at "+mounter.HostPath+" on the node", func() bool {
				ms, err := k8snode.MountsUnder(1, mounter.HostPath)
				return err == nil && len(ms) == 1 && ms[0].FSType == "tmpfs"
			})

			if !n.DeletePod(t, "shop", victim.Name, false) {
				t.Fatalf("pod shop/web: no deletionTimestamp after its deletion")
			}
			busy := l.m.waitFindings(t, 60*time.Second, 1, func(f logged) bool { return f.StuckPodUID == web.UID })
			// The kubelet goes on retrying; web stays, and so does the
			// finding: one.
			time.Sleep(5 * time.Second)
			if p := n.GetPod(t, "shop", victim.Name); p.DeletionTimestamp == "" {
				t.Fatalf("pod shop/web: deletionTimestamp not set while its teardown fails")
			}
			r.findings = about(l.m.findings(t), uids, pids...)
			// Exactly the teardown's EBUSY, whole: csi-node's process (the
			// mount(8) that made the mount has exited) in its namespace,
			// the mount made there cited, the fix entering through it.
			findingset.Exact(t, details(r.findings), []findingset.Want{{Kind: finding.KindFailure, Syscall: "unlinkat",
				Cause: finding.CauseSharedPropagation, PID: holderPID, Role: finding.RoleMember, NS: nsInode(t, holderNS),
				Event: "mount", Fix: holderPID}})
			if len(r.findings) != 1 || len(busy) != 1 {
				t.FailNow()
			}
			f := busy[0]
			mountPath := "/kubelet" + strings.TrimPrefix(mounter.HostPath, k8snode.KubeletRoot)
			for _, c := range []struct{ field, got, want string }{
				{"level", f.Level, "error"},
				{"finding", f.Finding, string(finding.KindFailure)},
				{"cause", f.Cause, finding.CauseSharedPropagation.String()},
				{"syscall", f.Syscall, "unlinkat"},
				{"errno", f.Errno, "EBUSY"},
				{"path", f.Path, mounter.HostPath},
				{"comm of the call", f.Detail.Call.Comm, "kubelet"},
				{"stuck_pod", f.StuckPod, "web"},
				{"stuck_namespace", f.StuckNamespace, "shop"},
				{"stuck_pod_uid", f.StuckPodUID, web.UID},
				{"stuck_volume", f.StuckVolume, victim.Volume},
				{"stuck_volume_type", f.StuckVolumeType, "emptyDir"},
				{"holder_pod", f.HolderPod, "csi-node"},
				{"holder_namespace", f.HolderNamespace, "storage"},
				{"holder_container", f.HolderContainer, "main"},
				{"holder_image", f.HolderImage, k8snode.BusyboxImage},
				{"holder_pid", strconv.Itoa(f.HolderPID), strconv.Itoa(holderPID)},
				{"holder_mntns", "mnt:[" + strconv.FormatUint(uint64(f.HolderMntNS), 10) + "]", holderNS},
				{"node", f.Node, n.Name},
				{"enrichment", f.Enrichment, ""},
				{"leak_event", f.LeakEvent, "mount mntleak-held → " + mountPath + " MS_SILENT by " + leakComm(f)},
			} {
				if c.got != c.want {
					t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
				}
			}
			// The leaking event: the mount by mount(8) in csi-node's namespace.
			if e := leakEvent(f); e == nil || e.Kind != "mount" || e.Comm != "mount" || "mnt:["+strconv.FormatUint(uint64(e.MntNS), 10)+"]" != holderNS {
				t.Errorf("leaking event %+v, want the mount by mount in %s", e, holderNS)
			}
			wantPrefix := "pod shop/web stuck: volume data (emptyDir) held by pod storage/csi-node (container main): EBUSY unlinkat " + mounter.HostPath
			if !strings.HasPrefix(f.Msg, wantPrefix) {
				t.Errorf("line:\n%s\nwant it to start with:\n%s", f.Msg, wantPrefix)
			}
			if want := "unmount it in " + holderNS + " where it was mounted"; !strings.HasPrefix(f.Detail.Fix, want) {
				t.Errorf("fix %q, want it to start with %q", f.Detail.Fix, want)
			}
			r.journal = l.m.checkJournal(t, f)

			// The Event, read back from the API server.
			evs := l.waitEvents(t, "shop", eventWait, 1)
			if len(evs) != 1 {
				t.Fatalf("%d Events of mntleak in shop, want 1: %+v", len(evs), evs)
			}
			checkEvent(t, evs[0], n.Name, kubeevents.ReasonBusy, kubeevents.FindingNote(f.Headline, f.Msg),
				podRef("shop", "web", web.UID), ptr(podRef("storage", "csi-node", csi.UID)))
			if evs := l.mntleakEvents(t, "storage"); len(evs) != 0 {
				t.Errorf("%d Events of mntleak in storage, want none (a failure is posted on the stuck pod)", len(evs))
			}
			// Without mntleak, the API server has no Warning about web's
			// stuck volume: the EBUSY is in the kubelet's log only. (A loaded
			// kubelet may warn about other things, such as the service
			// account token's volume set up late: not this teardown.)
			for _, e := range l.allEvents(t, "shop") {
				if e.Type == corev1.EventTypeWarning && e.ReportingController != kubeevents.Controller &&
					(strings.Contains(e.Note, "busy") || strings.Contains(e.Note, `"data"`) || strings.Contains(e.Note, web.UID)) {
					t.Errorf("a Warning about shop/%s's volume data not from mntleak: %s %s", e.Regarding.Name, e.Reason, e.Note)
				}
			}
			busyLog := regexp.MustCompile(`[^\n]*unlinkat ` + regexp.QuoteMeta(mounter.HostPath) + `: device or resource busy[^\n]*`)
			r.kubelet = busyLog.FindString(n.KubeletLog(t))
			// What the README tells to run: the core view of the Event.
			sel := []string{"get", "events", "-A", "--field-selector", "reportingComponent=" + kubeevents.Controller}
			if out := n.Kubectl(t, sel...); !regexp.MustCompile(`(?m)^shop .* Warning +MountBusy +pod/web `).MatchString(out) {
				t.Errorf("kubectl %s:\n%s\nwant the MountBusy Warning on pod/web", strings.Join(sel, " "), out)
			}
			// The block shows mntleak's Events of the scenario's own
			// namespaces only: -A would also list those of pods another run
			// left on the node, so the block would depend on what else ran.
			r.commands = [][]string{
				{"get", "pod", "-n", "shop", "web", "-o", "custom-columns=NAME:.metadata.name,STATUS:.status.phase,DELETION:.metadata.deletionTimestamp"},
				{"get", "events", "-n", "shop", "--field-selector", "involvedObject.name=web", "--sort-by=.metadata.creationTimestamp"},
			}
			for _, ns := range []string{"shop", "storage"} {
				r.commands = append(r.commands, []string{"get", "events", "-n", ns, "--field-selector", "reportingComponent=" + kubeevents.Controller})
			}
			r.write(t, l, tc.name)

			// Undo the mount on the node: the kubelet's next retry goes
			// through.
			if err := unix.Unmount(mounter.HostPath, 0); err != nil {
				t.Fatalf("umount %s: %v", mounter.HostPath, err)
			}
			if !n.WaitPodGone("shop", victim.Name, 90*time.Second) {
				t.Fatalf("pod shop/web still there 90 s after the tmpfs was unmounted")
			}
			l.m.Stop(t)
		})
	}
}

// leakComm is the process of f's leaking event, "comm[pid]" ("" without one).
func leakComm(f logged) string {
	if e := leakEvent(f); e != nil {
		return e.Comm + "[" + strconv.Itoa(int(e.PID)) + "]"
	}
	return ""
}

// leakEvent is the first event of f's evidence after the call: the one
// leak_event names.
func leakEvent(f logged) *finding.EventRef {
	for _, e := range f.Detail.Evidence[min(1, len(f.Detail.Evidence)):] {
		if e.Event != nil {
			return e.Event
		}
	}
	return nil
}

func podRef(ns, name, uid string) corev1.ObjectReference {
	return corev1.ObjectReference{APIVersion: "v1", Kind: "Pod", Namespace: ns, Name: name, UID: types.UID(uid)}
}

func ptr[T any](v T) *T { return &v }
