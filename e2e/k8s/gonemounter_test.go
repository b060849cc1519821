package k8s

import (
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/findingset"
	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/sink/kubeevents"
)

// TestDeletedMounterNamedByItsPod (issue 29, item 5): a Bidirectional pod
// (storage/csi-node) mounts a tmpfs inside another pod's volume (shop/web)
// and is deleted; its namespace is gone, the tmpfs stays on the node. Then
// web is deleted and the kubelet's unlinkat fails with EBUSY. The finding,
// and the Event on web, name the process that made the mount by its pod,
// storage/csi-node, though that pod is gone from the API server and the
// runtime by then: the mount event carried its cgroup, and the daemon
// asked the runtime about its container when the event arrived.
func TestDeletedMounterNamedByItsPod(t *testing.T) {
	l := setup(t, "shop", "storage")
	n := l.n
	victim := k8snode.EmptyDirPod("shop", "web")
	n.Apply(t, victim.Manifest)
	web := n.WaitPodRunning(t, "shop", victim.Name)
	mounter := k8snode.BidirectionalMounter("storage", "csi-node", victim, web.UID)
	// Runs before web's cleanup: a test stopped half-way leaves no stuck pod.
	t.Cleanup(func() { _ = unix.Unmount(mounter.HostPath, unix.MNT_DETACH) })
	n.Apply(t, mounter.Manifest)
	csi := n.WaitPodRunning(t, "storage", mounter.Name)
	holderNS, err := k8snode.MountNS(n.ContainerPID(t, "storage", mounter.Name, "main"))
	if err != nil {
		t.Fatal(err)
	}
	privtest.WaitFor(t, 20*time.Second, "tmpfs at "+mounter.HostPath+" on the node", func() bool {
		ms, err := k8snode.MountsUnder(1, mounter.HostPath)
		return err == nil && len(ms) == 1 && ms[0].FSType == "tmpfs"
	})

	// The mounter's pod is deleted and gone; the kernel still shows its
	// tmpfs on the node (the oracle).
	n.DeletePod(t, "storage", mounter.Name, false)
	if !n.WaitPodGone("storage", mounter.Name, 60*time.Second) {
		t.Fatalf("pod storage/%s still there 60 s after its deletion", mounter.Name)
	}
	if ms, err := k8snode.MountsUnder(1, mounter.HostPath); err != nil || len(ms) != 1 || ms[0].FSType != "tmpfs" {
		t.Fatalf("the node's mounts at %s after csi-node went: %v %v, want its tmpfs", mounter.HostPath, ms, err)
	}

	if !n.DeletePod(t, "shop", victim.Name, false) {
		t.Fatalf("pod shop/web: no deletionTimestamp after its deletion")
	}
	busy := l.m.waitFindings(t, 60*time.Second, 1, func(f logged) bool { return f.StuckPodUID == web.UID })
	time.Sleep(5 * time.Second) // the kubelet goes on retrying: still one finding
	got := about(l.m.findings(t), []string{web.UID, csi.UID})
	// Exactly the teardown's EBUSY: led by the copy in the kubelet's own
	// namespace, no process to name (csi-node's namespace is gone), the
	// mount made in csi-node's namespace cited. (findingset.Want names one
	// namespace for both the holder and the cited event: not this case.)
	if len(got) != 1 || len(busy) != 1 {
		for _, f := range got {
			t.Logf("got: %s", f.Msg)
		}
		t.Fatalf("%d findings about the test's pods (%d about web), want 1", len(got), len(busy))
	}
	f := busy[0].Detail
	hd, actor := f.Actor()
	if f.Kind != finding.KindFailure || f.Call.Syscall != "unlinkat" || f.Cause != finding.CauseSharedPropagation ||
		hd == nil || !hd.Self || hd.MntNS != f.Call.MntNS || actor != nil {
		t.Errorf("want a failure of unlinkat, shared-propagation, led by the caller's own copy, naming no process; got %s %s %s, actor %+v:\n%s",
			f.Kind, f.Call.Syscall, f.Cause, actor, f.Line())
	}
	if !findingset.Cites(f, nsInode(t, holderNS), "mount") {
		t.Errorf("no mount in %s is cited: %+v", holderNS, f.Evidence)
	}
	findingset.FixPIDs(t, f, 0)
	who := "(pod storage/csi-node) in " + holderNS + " mounted /kubelet" + strings.TrimPrefix(mounter.HostPath, k8snode.KubeletRoot)
	for _, c := range []struct{ what, text, want string }{
		{"summary", f.Summary, who},
		{"summary", f.Summary, holderNS + " is gone since"},
		{"fix", f.Fix, holderNS + " (pod storage/csi-node), which mounted it, is gone"},
	} {
		if !strings.Contains(c.text, c.want) {
			t.Errorf("%s lacks %q:\n%s", c.what, c.want, c.text)
		}
	}
	if strings.Contains(f.Summary+f.Fix, csi.UID) {
		t.Errorf("the pod named by its UID, not its name:\n%s\n%s", f.Summary, f.Fix)
	}
	e := leakEvent(busy[0])
	if e == nil || e.Kind != "mount" || e.Pod != csi.UID || e.Container == "" || e.Workload == nil ||
		e.Workload.Text() != "pod storage/csi-node (container main)" {
		t.Errorf("the mount's event %+v (workload %+v), want pod %s's container main", e, workloadOf(e), csi.UID)
	}
	if f.Enrichment != "" {
		t.Errorf("enrichment %q, want none", f.Enrichment)
	}

	// The Event on web, read back from the API server: the finding's line.
	evs := l.waitEvents(t, "shop", eventWait, 1)
	if len(evs) != 1 || evs[0].Reason != kubeevents.ReasonBusy || evs[0].Note != kubeevents.FindingNote(busy[0].Headline, busy[0].Msg) {
		t.Errorf("Events of mntleak in shop: %+v, want one %s with the finding's line", evs, kubeevents.ReasonBusy)
	}
	t.Logf("the finding: %s", busy[0].Msg)

	if err := unix.Unmount(mounter.HostPath, 0); err != nil {
		t.Fatalf("umount %s: %v", mounter.HostPath, err)
	}
	if !n.WaitPodGone("shop", victim.Name, 90*time.Second) {
		t.Fatalf("pod shop/web still there 90 s after the tmpfs was unmounted")
	}
	l.m.Stop(t)
}

func workloadOf(e *finding.EventRef) string {
	if e == nil || e.Workload == nil {
		return "none"
	}
	return e.Workload.Text() + " uid " + e.Workload.PodUID + " id " + strconv.Quote(e.Workload.ContainerID)
}
