package daemon

import (
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/internal/kubeclient/kubetest"
)

// TestStuckPodNamedAfterTheAPIServerForgetsIt: the kubelet unmounts a
// pod's emptyDir (its copy leaked in another namespace), then completes
// the pod's deletion; the leak is named after its settle, when the API
// server no longer has the pod. The pod was asked about at the unmount,
// by the kubelet path's UID (the pod existed before the daemon started,
// so no earlier event named it), and the finding names it: pod
// shop/cache, not its UID. (The last CI run but one failed so in
// e2e/k8s TestPinnedMemoryEmptyDir: stuck_pod "", want "cache".)
func TestStuckPodNamedAfterTheAPIServerForgetsIt(t *testing.T) {
	const uid = "b31a22ac-5d1e-4c2b-9a7f-3e4d5c6b7a80"
	vol := "/var/lib/kubelet/pods/" + uid + "/volumes/kubernetes.io~empty-dir/data"
	api := kubetest.Start(t, kubetest.Pod("cache", "shop", uid, "node-1", ""))
	fs, logs := openTestFindings(t, Config{Kube: true, Kubeconfig: api.Kubeconfig(t), NodeName: "node-1",
		KubeletRoot: "/var/lib/kubelet", RuntimeTimeout: 2 * time.Second})
	defer fs.close()
	// The kubelet's unmount: a process on the host (no pod cgroup).
	fs.warm(&event.Event{Kind: event.KindUmount, Syscall: "umount2", PID: 40, Comm: "kubelet", MntNS: 1, Target: vol})
	if !privtest.Poll(5*time.Second, func() bool { return api.Served("list", "pods") > 0 }) {
		t.Errorf("the pod of %s was not asked about at its unmount (%d lists of the node's pods)", vol, api.Requests("list", "pods"))
	}
	api.DeletePod(uid)
	f := &finding.Finding{Kind: finding.KindLeak, Cause: finding.CauseRprivateBind,
		Call:    finding.Call{PID: 40, Comm: "kubelet", Syscall: "umount2", MntNS: 1},
		Object:  finding.Object{Path: vol, FSType: "tmpfs"},
		Holders: []finding.Holder{{MntNS: 2, Where: vol, Processes: []finding.ProcRef{{PID: 50, Comm: "node-agent"}}}}}
	fs.submit(f)
	fs.close()
	if n := logs.FilterMessageSnippet("pod shop/cache").Len(); n != 1 {
		// How often the node's pods were listed (asked, answered) tells a
		// warm answer that was not kept (2, 2) from one that was wrong (1, 1).
		t.Errorf("%d finding lines name pod shop/cache, want 1 (lists of the node's pods: %d asked, %d answered): %v",
			n, api.Requests("list", "pods"), api.Served("list", "pods"), logs.All())
	}
	if f.Stuck == nil || f.Stuck.Name != "cache" || f.Stuck.Namespace != "shop" {
		t.Errorf("stuck pod %+v, want shop/cache", f.Stuck)
	}
}
