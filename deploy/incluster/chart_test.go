package incluster

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/findingset"
	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/oraclecheck"
	"github.com/mntleak/mntleak/e2e/testkit/journaldtest"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	releasepkg "github.com/mntleak/mntleak/release"
	"github.com/mntleak/mntleak/sink/kubeevents"

	"github.com/mntleak/mntleak/finding"
)

// The release, its namespace and the scenario's namespaces.
const (
	release = "mntleak"
	ns      = "mntleak"
	shop    = "incluster-shop"
	agents  = "incluster-monitoring"
)

// TestChartInstalledOnTheNode is issue 16's last Done-when: on the real
// node, the chart installed with helm and the image built here (imported
// into containerd, never pulled), its DaemonSet's pod made by the
// DaemonSet controller, Running and Ready with the chart's six
// capabilities; a Memory emptyDir leaked into a hostPath pod that pins it
// (issue 15's scenario 2) is reported in the pod's log, in the journal the
// chart's socket leads to, and as MountLeaked Events the pod posted with
// its own ServiceAccount token under the chart's RBAC; helm uninstall
// leaves no pod, RBAC object or mount behind, and the image goes too.
func TestChartInstalledOnTheNode(t *testing.T) {
	n := k8snode.Up(t)
	privtest.RequireCommands(t, "dockerd", "docker", "ctr", "unshare", "/lib/systemd/systemd-journald", "journalctl")
	dir := t.TempDir()
	v := version(t)
	ref := "docker.io/library/mntleak:" + v
	archive := buildArchive(t, privtest.Mkdir(t, filepath.Join(dir, "build")))
	start := time.Now()
	n.ImportImage(t, archive, ref)
	t.Logf("ctr images import: %v", time.Since(start).Round(100*time.Millisecond))
	j := journaldtest.Start(t)
	state := privtest.Mkdir(t, filepath.Join(dir, "state"))
	// Every hostPath the chart mounts HostToContainer, on a shared mount
	// as on a real node.
	for _, p := range []string{"/sys/kernel/btf", j.Socket, state, k8snode.KubeletRoot, k8snode.ContainerdSocket, privtest.Mkdir(t, releasepkg.LockDir)} {
		shareHostPath(t, p)
	}

	// helm install, as the README says, with this node's values.
	h := newHelm(t, n)
	uninstalled := false
	t.Cleanup(func() {
		if !uninstalled {
			if out, err := h.run("uninstall", release, "--namespace", ns, "--wait"); err != nil && !strings.Contains(out, "not found") {
				t.Error(err)
			}
		}
		if _, err := n.KubectlErr(nil, "delete", "namespace", ns, "--ignore-not-found", "--wait=true", "--timeout=90s"); err != nil {
			t.Errorf("delete namespace %s: %v", ns, err)
		}
	})
	start = time.Now()
	if _, err := h.run("install", release, filepath.Join(repo, "deploy", "helm", "mntleak"), "--namespace", ns, "--create-namespace",
		"--set-string", "image.tag="+v,
		"--set", "events.enabled=true",
		"--set", "journald.socket="+j.Socket,
		"--set", "stateDir="+state,
		"--set", "kubeletDir="+k8snode.KubeletRoot,
		"--set", "criSocket="+k8snode.ContainerdSocket); err != nil {
		t.Fatal(err)
	}

	// The DaemonSet controller makes the pod, the scheduler places it.
	selector := "app.kubernetes.io/instance=" + release
	p := readyPod(t, n, ns, selector)
	t.Logf("helm install to a Ready pod: %v", time.Since(start).Round(100*time.Millisecond))
	owner := p.Metadata.OwnerReferences
	if len(owner) != 1 || owner[0].Kind != "DaemonSet" || owner[0].Name != release || !owner[0].Controller {
		t.Errorf("pod %s owned by %+v, want the DaemonSet %s", p.Metadata.Name, owner, release)
	}
	if p.Spec.NodeName != n.Name || p.Spec.ServiceAccountName != release {
		t.Errorf("pod %s on node %q as %q, want node %q as ServiceAccount %q", p.Metadata.Name, p.Spec.NodeName, p.Spec.ServiceAccountName, n.Name, release)
	}
	if cs := p.Status.ContainerStatuses; len(cs) != 1 || cs[0].Image != ref || cs[0].RestartCount != 0 {
		t.Errorf("container statuses %+v, want one of %s, never restarted", cs, ref)
	}
	has := func(match func(logged) bool) bool {
		return slices.ContainsFunc(podLog(t, n, ns, p.Metadata.Name), match)
	}
	if !privtest.Poll(60*time.Second, func() bool { return has(func(l logged) bool { return l.Msg == "tracing" }) }) {
		t.Fatalf("the pod is not tracing:\n%s", n.Kubectl(t, "logs", "-n", ns, p.Metadata.Name, "--tail=30"))
	}
	t.Logf("helm install to tracing: %v", time.Since(start).Round(100*time.Millisecond))
	t.Cleanup(func() {
		if t.Failed() && !uninstalled {
			for _, l := range podLog(t, n, ns, p.Metadata.Name) {
				if l.Logger == "correlate" || l.Level == "warn" || l.Level == "error" {
					t.Logf("the pod logged: %s %s: %s", l.Level, l.Logger, l.Msg)
				}
			}
		}
	})
	// Nothing wrong with the daemon itself. Findings are logged at error
	// too, and the pod traces the whole machine: other tests' real leaks,
	// made while this one runs, are findings (one failed this check once).
	for _, l := range podLog(t, n, ns, p.Metadata.Name) {
		if (l.Level == "warn" || l.Level == "error") && l.Finding == "" {
			t.Errorf("the pod logged at %s: %s", l.Level, l.Msg)
		}
	}

	// Issue 15's scenario 2: cache's Memory emptyDir, copied into
	// node-agent's namespace (hostPath of the kubelet root, propagation
	// None) and pinned there by its process's cwd and open file; cache is
	// deleted and goes, the copy stays.
	n.CreateNamespace(t, shop)
	n.CreateNamespace(t, agents)
	work := k8snode.MemoryEmptyDirPod(shop, "cache")
	n.Apply(t, work.Manifest)
	cache := n.WaitPodRunning(t, shop, work.Name)
	holder := k8snode.Pinner(agents, "node-agent", work, cache.UID)
	n.Apply(t, holder.Manifest)
	agent := n.WaitPodRunning(t, agents, holder.Name)
	pid := n.ContainerPID(t, agents, holder.Name, "main")
	if n.DeletePod(t, shop, work.Name, true) {
		t.Fatalf("pod %s/%s stuck after its deletion", shop, work.Name)
	}
	privtest.AfterLeakSettle(t)
	var f logged
	leak := func(l logged) bool {
		if l.Logger == "correlate" && l.Finding == string(finding.KindLeak) && l.HolderPID == pid {
			f = l
			return true
		}
		return false
	}
	if !privtest.Poll(30*time.Second, func() bool { return has(leak) }) {
		t.Fatalf("no leak finding naming node-agent's pid %d in the pod's log", pid)
	}
	t.Logf("the pod's finding: %s", f.Msg)
	// The kernel's own state agrees (the oracle runs here, on the node's
	// kernel the pod traces), and the finding is the only one about the
	// pods, whole: node-agent's process pins the detached copy, runc's
	// rbind of the hostPath in its namespace is cited, the fix is the
	// pod's spec and a container restart (no process to act on).
	oraclecheck.CheckLogged(t, f)
	mntns, err := k8snode.MountNS(pid)
	if err != nil {
		t.Fatal(err)
	}
	var ofPods []*finding.Finding
	for _, l := range podLog(t, n, ns, p.Metadata.Name) {
		if l.IsFinding() && (strings.Contains(l.Raw, cache.UID) || strings.Contains(l.Raw, agent.UID) || l.HolderPID == pid) {
			ofPods = append(ofPods, l.Detail)
		}
	}
	ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(mntns, "mnt:["), "]"), 10, 32)
	if err != nil {
		t.Fatalf("namespace %q: %v", mntns, err)
	}
	findingset.Exact(t, ofPods, []findingset.Want{{Kind: finding.KindLeak, Syscall: "umount2", Cause: finding.CauseRprivateBind,
		PID: pid, Role: finding.RolePinner, NS: uint32(ino), Event: "mount"}})
	for _, c := range []struct{ field, got, want string }{
		{"path", f.Path, work.HostDir(cache.UID)},
		{"stuck_pod", f.StuckPod, work.Name},
		{"stuck_namespace", f.StuckNamespace, shop},
		{"stuck_pod_uid", f.StuckPodUID, cache.UID},
		{"holder_pod", f.HolderPod, holder.Name},
		{"holder_namespace", f.HolderNamespace, agents},
		{"holder_container", f.HolderContainer, "main"},
		{"node", f.Node, n.Name},
		{"enrichment", f.Enrichment, ""},
	} {
		if c.got != c.want {
			t.Errorf("%s = %q, want %q", c.field, c.got, c.want)
		}
	}
	wantPrefix := "pod " + shop + "/cache: volume data (emptyDir, tmpfs: its data stays readable) leaked, held by pod " + agents + "/node-agent (container main): LEAK "
	if !strings.HasPrefix(f.Msg, wantPrefix) {
		t.Errorf("line:\n%s\nwant it to start with:\n%s", f.Msg, wantPrefix)
	}

	// The same finding in the journal, through the chart's socket.
	entries := j.Entries(t, 10*time.Second, "MNTLEAK_FINDING_ID="+f.FindingID)
	if len(entries) != 1 {
		t.Errorf("%d journal entries of finding %s, want 1", len(entries), f.FindingID)
	} else {
		e := entries[0]
		for field, want := range map[string]string{
			"MESSAGE": f.Headline, "MNTLEAK_SUMMARY": f.Msg, "MNTLEAK_FINDING": "leak", "MNTLEAK_CAUSE": f.Cause, "MNTLEAK_HOLDER_PID": strconv.Itoa(pid),
			"MNTLEAK_STUCK_POD": work.Name, "MNTLEAK_HOLDER_POD": holder.Name, "MNTLEAK_NODE": n.Name,
		} {
			if got, _ := e[field].(string); got != want {
				t.Errorf("journal %s = %q, want %q", field, got, want)
			}
		}
	}

	// The Events, read back from the API server: on node-agent (related:
	// cache) and on cache (related: node-agent).
	agentRef := objectRef{Kind: "Pod", Namespace: agents, Name: holder.Name, UID: agent.UID}
	cacheRef := objectRef{Kind: "Pod", Namespace: shop, Name: work.Name, UID: cache.UID}
	for _, want := range []struct {
		ns                 string
		regarding, related objectRef
	}{{agents, agentRef, cacheRef}, {shop, cacheRef, agentRef}} {
		var evs []event
		privtest.Poll(30*time.Second, func() bool { evs = mntleakEvents(t, n, want.ns); return len(evs) > 0 })
		if len(evs) != 1 {
			t.Errorf("%d Events of mntleak in %s, want 1: %+v", len(evs), want.ns, evs)
			continue
		}
		e := evs[0]
		if e.Type != "Warning" || e.Reason != kubeevents.ReasonLeaked || e.ReportingInstance != n.Name || e.Note != kubeevents.FindingNote(f.Headline, f.Msg) {
			t.Errorf("Event in %s: type %q reason %q reportingInstance %q note %q; want Warning %s %s and the finding's line",
				want.ns, e.Type, e.Reason, e.ReportingInstance, e.Note, kubeevents.ReasonLeaked, n.Name)
		}
		if e.Regarding != want.regarding || e.Related == nil || *e.Related != want.related {
			t.Errorf("Event in %s: regarding %s related %s, want %s and %s", want.ns, e.Regarding.String(), e.Related.String(), want.regarding.String(), want.related.String())
		}
	}
	// Counted by the pod, on its IP, scraped from the node.
	metrics := "http://" + net.JoinHostPort(p.Status.PodIP, "9464") + "/metrics"
	if got := scrape(t, metrics, "mntleak_k8s_events_total", `result="posted"`); got != 2 {
		t.Errorf("mntleak_k8s_events_total{result=\"posted\"} = %v, want 2", got)
	}
	if got := scrape(t, metrics, "mntleak_k8s_events_total", `result="failed"`); got > 0 {
		t.Errorf("mntleak_k8s_events_total{result=\"failed\"} = %v, want none", got)
	}

	// helm uninstall: the pod, the DaemonSet, its Service, ServiceAccount
	// and RBAC go; the pod's volumes are unmounted everywhere.
	start = time.Now()
	if _, err := h.run("uninstall", release, "--namespace", ns, "--wait"); err != nil {
		t.Fatal(err)
	}
	uninstalled = true
	if !n.WaitPodGone(ns, p.Metadata.Name, 60*time.Second) {
		t.Errorf("pod %s/%s still there 60 s after helm uninstall", ns, p.Metadata.Name)
	}
	t.Logf("helm uninstall to the pod gone: %v", time.Since(start).Round(100*time.Millisecond))
	if out := n.Kubectl(t, "get", "all,serviceaccounts,roles,rolebindings,secrets,configmaps", "-n", ns, "-o", "name"); !onlyDefaults(out) {
		t.Errorf("left in namespace %s after helm uninstall:\n%s", ns, out)
	}
	for _, kind := range []string{"clusterrole", "clusterrolebinding"} {
		if out := n.Kubectl(t, "get", kind, release, "--ignore-not-found", "-o", "name"); strings.TrimSpace(out) != "" {
			t.Errorf("left after helm uninstall: %s", out)
		}
	}
	if out, err := n.KubectlErr(nil, "auth", "can-i", "create", "events.events.k8s.io", "--as=system:serviceaccount:"+ns+":"+release, "-n", shop); strings.TrimSpace(out) != "no" {
		t.Errorf("the ServiceAccount may still create Events after helm uninstall: %q (%v)", out, err)
	}
	left, err := k8snode.MountsNaming(p.Metadata.UID)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range left {
		t.Errorf("the uninstalled pod's volume is still mounted: %s", m)
	}
	if _, err := os.Stat(filepath.Join(state, "lock")); err != nil {
		t.Errorf("the daemon's state dir %s has no lock file (%v): the chart's stateDir was not used", state, err)
	}
}

// onlyDefaults reports whether kubectl get -o name lists only what every
// namespace has: its default ServiceAccount and kube-root-ca.crt.
func onlyDefaults(out string) bool {
	for _, name := range strings.Fields(out) {
		if name != "serviceaccount/default" && name != "configmap/kube-root-ca.crt" {
			return false
		}
	}
	return true
}

// readyPod waits for the one pod of the DaemonSet (by selector, in ns) to
// run and be Ready, and fails the test with its description otherwise.
func readyPod(t *testing.T, n *k8snode.Node, ns, selector string) pod {
	t.Helper()
	var p pod
	if !privtest.Poll(k8snode.PodStart, func() bool {
		ps := pods(t, n, ns, selector)
		if len(ps) == 1 {
			p = ps[0]
		}
		return len(ps) == 1 && p.Status.Phase == "Running" && p.ready()
	}) {
		desc, _ := n.KubectlErr(nil, "describe", "pods", "-n", ns, "-l", selector)
		t.Fatalf("no Ready pod of the DaemonSet within %v:\n%s", k8snode.PodStart, desc)
	}
	return p
}
