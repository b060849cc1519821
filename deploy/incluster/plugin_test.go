package incluster

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/sink/kubeevents"
)

// The plugin test's namespaces.
const (
	plugShop    = "plugin-shop"
	plugStorage = "plugin-storage"
)

// TestPluginOnTheNode is issue 29 items 1-3 on the real node: a pod stuck
// in Terminating by another pod's Bidirectional mount inside its volume,
// and a healthy pod beside it. `mntleak why pod` on the node without a
// daemon names the holder pod's process (the kernel's oracle: the tmpfs is
// in that process's mount table) and says nothing holds the healthy pod;
// then the chart installed with its defaults posts a Warning MountBusy
// Event on the stuck pod naming the holder pod (Events on by default,
// under the chart's RBAC), and `kubectl mntleak` answers the same through
// the DaemonSet's pod: why for both pods, audit --all-nodes, release's
// dry run, and each error with its one line and exit code. Then release
// --apply: csi-node's tmpfs is its own mount, still on the node (in-use,
// not a leak), so nothing is detached (the kernel shows the same mount in
// csi-node's namespace and on the node, csi-node running, web still
// Terminating); the finding's fix, the unmount on the node, reaches
// csi-node's copy and web goes. Last, a leaked copy of the node's (a
// private holder's copy of a tmpfs the node unmounted) is released by
// `mntleak release --apply` in the DaemonSet's pod, as the plugin runs it:
// gone from the holder's table, the holder running, the record in the
// node's lock directory. And `kubectl mntleak release pod/vault --apply`
// detaches a private holder's copy of pod vault's Memory emptyDir by the
// pod's name (releaseByPodName), and vault goes.
func TestPluginOnTheNode(t *testing.T) {
	n := k8snode.Up(t)
	privtest.RequireCommands(t, "dockerd", "docker", "ctr", "go")
	dir := t.TempDir()
	mntleakBin := buildCommand(t, dir, "mntleak")
	plugin := buildCommand(t, dir, "kubectl-mntleak")

	n.CreateNamespace(t, plugShop)
	n.CreateNamespace(t, plugStorage)
	calm := k8snode.EmptyDirPod(plugShop, "calm")
	n.Apply(t, calm.Manifest)
	victim := k8snode.EmptyDirPod(plugShop, "web")
	n.Apply(t, victim.Manifest)
	web := n.WaitPodRunning(t, plugShop, victim.Name)
	calmPod := n.WaitPodRunning(t, plugShop, calm.Name)
	mounter := k8snode.BidirectionalMounter(plugStorage, "csi-node", victim, web.UID)
	// Runs before web's cleanup: a test stopped half-way leaves no stuck pod.
	t.Cleanup(func() { _ = unix.Unmount(mounter.HostPath, unix.MNT_DETACH) })
	n.Apply(t, mounter.Manifest)
	csi := n.WaitPodRunning(t, plugStorage, mounter.Name)
	holderPID := n.ContainerPID(t, plugStorage, mounter.Name, "main")
	privtest.WaitFor(t, 20*time.Second, "tmpfs at "+mounter.HostPath+" on the node", func() bool {
		ms, err := k8snode.MountsUnder(1, mounter.HostPath)
		return err == nil && len(ms) == 1 && ms[0].FSType == "tmpfs"
	})
	// The oracle: the kernel shows the tmpfs in csi-node's namespace too.
	inHolder := "/kubelet" + strings.TrimPrefix(mounter.HostPath, k8snode.KubeletRoot)
	if ms, err := k8snode.MountsUnder(holderPID, inHolder); err != nil || len(ms) != 1 {
		t.Fatalf("csi-node's namespace (pid %d) has %d mounts at %s (%v), want the tmpfs", holderPID, len(ms), inHolder, err)
	}
	if !n.DeletePod(t, plugShop, victim.Name, false) {
		t.Fatalf("pod %s/web: no deletionTimestamp after its deletion", plugShop)
	}
	nsLink, err := k8snode.MountNS(holderPID)
	if err != nil {
		t.Fatal(err)
	}
	ino, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(nsLink, "mnt:["), "]"), 10, 32)
	if err != nil {
		t.Fatalf("%s: %v", nsLink, err)
	}
	ours := map[uint32]bool{uint32(ino): true}
	nested := "a mount inside volume data (emptyDir)"
	// checkStuck: of the objects the scenario's namespaces hold, exactly
	// one: the tmpfs csi-node mounted inside web's volume, held in
	// csi-node's namespace by its process, at the path the kernel shows.
	checkStuck := func(r result, how string) {
		t.Helper()
		a := decodeAnswer(t, r)
		if mine := scenarioHeld(t, a, ours); r.code != 1 || a.UID != web.UID || !slices.Equal(mine, []string{nested}) {
			t.Errorf("%s: exit %d, uid %s, held by the scenario %q; want exit 1, uid %s, %q", how, r.code, a.UID, mine, web.UID, nested)
		}
		for _, h := range a.Held {
			if h.Object.Text != nested {
				continue
			}
			named := false
			for _, hh := range h.Finding.Holders {
				for _, p := range hh.Processes {
					named = named || (ours[hh.MntNS] && p.PID == holderPID && hh.Where == inHolder)
				}
			}
			if !named || h.Object.Path != mounter.HostPath {
				t.Errorf("%s: %s at %s held by %+v; want csi-node's pid %d at %s", how, nested, h.Object.Path, h.Finding.Holders, holderPID, inHolder)
			}
		}
	}
	checkCalm := func(r result, how string) {
		t.Helper()
		a := decodeAnswer(t, r)
		if mine := scenarioHeld(t, a, ours); (r.code != 0 && len(a.Held) == 0) || a.UID != calmPod.UID || len(mine) != 0 || len(a.Objects) == 0 {
			t.Errorf("%s: exit %d, uid %s, %d objects, held by the scenario %q; want uid %s, objects, none held", how, r.code, a.UID, len(a.Objects), mine, calmPod.UID)
		}
	}
	calmLast := fmt.Sprintf("nothing holds pod %s/calm's mounts", plugShop)

	// On the node, no daemon: from /proc alone (no state dir).
	nodeArgs := []string{"why", "pod", "--json", "--kubeconfig", n.Kubeconfig, "--cri-socket", k8snode.ContainerdSocket, "--kubelet-root", k8snode.KubeletRoot, "--state-dir="}
	checkStuck(runCommand(t, mntleakBin, append(nodeArgs, plugShop+"/web")...), "why pod on the node, no daemon")
	checkCalm(runCommand(t, mntleakBin, append(nodeArgs, plugShop+"/calm")...), "why pod on the node, no daemon")
	checkStuck(runCommand(t, mntleakBin, "why", "pod", "--json", "--pod-uid", web.UID, "--cri-socket=", "--kubelet-root", k8snode.KubeletRoot, "--state-dir="),
		"why pod --pod-uid, no API server, no runtime")
	if r := runCommand(t, mntleakBin, append(nodeArgs, plugShop+"/nope")...); r.code != 1 ||
		!strings.HasPrefix(r.stderr, "mntleak why pod: pod "+plugShop+"/nope not found (the API server has no pod "+plugShop+"/nope") {
		t.Errorf("why pod of no pod: exit %d, stderr %q", r.code, r.stderr)
	}

	// The chart with its defaults: Events on.
	state := privtest.Mkdir(t, filepath.Join(dir, "state"))
	daemonPod := installChart(t, n, state)
	daemonName := ns + "/" + daemonPod.Metadata.Name
	// The kubelet retries web's teardown: its EBUSY is a Warning MountBusy
	// on web, related to csi-node (the pod whose Bidirectional mount it
	// is), posted by the pod. The daemon's own namespace has a copy too
	// (HostToContainer: a slave the node's unmount reaches): never named.
	nodeNS, err := k8snode.MountNS(os.Getpid()) // the node's: the test runs there
	if err != nil {
		t.Fatal(err)
	}
	var evs []event
	onWeb := func(e event) bool { return e.Regarding.Name == "web" }
	privtest.Poll(90*time.Second, func() bool { evs = mntleakEvents(t, n, plugShop); return slices.ContainsFunc(evs, onWeb) })
	csiRef := objectRef{Kind: "Pod", Namespace: plugStorage, Name: mounter.Name, UID: csi.UID}
	// A leak whose unmount another test made in a namespace of its own
	// (umount -R of a copy of the kubelet's directory, seen once) is that
	// test's: logged, not counted.
	evs = slices.DeleteFunc(evs, func(e event) bool {
		_, in, ok := strings.Cut(e.Note, ") unmounted by ")
		if ok && !onWeb(e) && !strings.Contains(in, " in "+nsLink+":") && !strings.Contains(in, " in "+nodeNS+":") {
			t.Logf("another test's unmount: %s on %s: %s", e.Reason, e.Regarding.String(), e.Note)
			return true
		}
		return false
	})
	if len(evs) != 1 {
		t.Errorf("%d Events of mntleak in %s, want 1 (a MountBusy on web)", len(evs), plugShop)
	}
	for _, e := range evs {
		if e.Type != "Warning" || e.Reason != kubeevents.ReasonBusy || e.Regarding.Name != "web" || e.Regarding.UID != web.UID ||
			e.Related == nil || *e.Related != csiRef || e.ReportingInstance != n.Name {
			t.Errorf("Event: %s on %s related %s from %s; want a Warning %s on web related %s from %s; its note: %s",
				e.Reason, e.Regarding.String(), e.Related.String(), e.ReportingInstance, kubeevents.ReasonBusy, csiRef.String(), n.Name, e.Note)
		}
	}
	if t.Failed() {
		for _, l := range podLog(t, n, ns, daemonPod.Metadata.Name) {
			if l.IsFinding() {
				t.Logf("the daemon's finding: %s", l.Msg)
			}
		}
	}

	kc := "--kubeconfig=" + n.Kubeconfig
	stuck := runCommand(t, plugin, "why", "pod/web", "-n", plugShop, kc)
	keep(t, "why-web.txt", "$ kubectl mntleak why pod/web -n "+plugShop+"\n"+stuck.stderr+stuck.stdout)
	if want := fmt.Sprintf("pod %s/web (uid %s): ", plugShop, web.UID); stuck.code != 1 || !strings.HasPrefix(stuck.stdout, want) ||
		!strings.Contains(stuck.stdout, "\n"+nested+" is held:\n") || !strings.Contains(stuck.stdout, "pod "+plugStorage+"/csi-node (container main)") {
		t.Errorf("kubectl mntleak why pod/web: exit %d; want 1, %q first, %q held by pod %s/csi-node", stuck.code, want, nested, plugStorage)
	}
	if want := "kubectl mntleak why: node " + n.Name + ", asking " + daemonName + "\n"; !strings.HasPrefix(stuck.stderr, want) {
		t.Errorf("stderr %q, want it to start with %q", stuck.stderr, want)
	}
	checkStuck(runCommand(t, plugin, "why", "pod/web", "-n", plugShop, kc, "--json"), "kubectl mntleak why pod/web --json")
	calmJSON := runCommand(t, plugin, "why", "calm", "--namespace", plugShop, kc, "--json")
	checkCalm(calmJSON, "kubectl mntleak why calm --json")
	if calmText := runCommand(t, plugin, "why", "calm", "--namespace", plugShop, kc); len(decodeAnswer(t, calmJSON).Held) == 0 &&
		(calmText.code != 0 || lastLine(calmText.stdout) != calmLast) {
		t.Errorf("kubectl mntleak why calm: exit %d, last line %q; want 0 and %q", calmText.code, lastLine(calmText.stdout), calmLast)
	}

	all := runCommand(t, plugin, "audit", "--all-nodes", kc)
	if want := "node " + n.Name + " (" + daemonName + "):\n"; !strings.HasPrefix(all.stdout, want) || all.code == 4 || all.code == 2 {
		t.Errorf("audit --all-nodes: exit %d:\n%s\nwant a block %q", all.code, all.stdout, want)
	}
	plan := runCommand(t, plugin, "release", "pod/web", "-n", plugShop, kc)
	if want := nested + ": "; plan.code == 0 || !strings.Contains(plan.stdout, want) {
		t.Errorf("release pod/web: exit %d:\n%s\nwant a plan starting %q", plan.code, plan.stdout, want)
	}

	// A pod by UID and node, as for a pod gone from the API server.
	checkStuck(runCommand(t, plugin, "why", "--json", "--pod-uid", web.UID, "--node", n.Name, kc), "kubectl mntleak why --pod-uid")

	// The errors: one line each, the plugin's exit 4 (2 for bad input).
	viewer := "--kubeconfig=" + viewerKubeconfig(t, n)
	for _, c := range []struct {
		args []string
		code int
		line string
	}{
		{[]string{"why", "pod/nope", "-n", plugShop, kc}, 4,
			"kubectl mntleak why: pod " + plugShop + "/nope not found (a pod gone from the API server: --pod-uid UID --node NODE)"},
		{[]string{"why", "--pod-uid", web.UID, "--node", "ghost", kc}, 4,
			"kubectl mntleak why: node ghost has no running mntleak pod (pods labelled app.kubernetes.io/name=mntleak in any namespace): install the chart deploy/helm/mntleak"},
		{[]string{"audit", "--node", "ghost", kc}, 4, ""},
		{[]string{"why", "pod/web", "-n", plugShop, viewer}, 4,
			"kubectl mntleak why: forbidden: your RBAC does not allow create pods/exec in namespace " + ns + " (kubectl auth can-i create pods/exec -n " + ns + "): "},
		{[]string{"why", "deployment/web", kc}, 2, `kubectl mntleak why: "deployment/web": only pods are explained: want pod/NAME`},
	} {
		r := runCommand(t, plugin, c.args...)
		if r.code != c.code || strings.Count(r.stderr, "\n") > 1 || !strings.HasPrefix(r.stderr, c.line) {
			t.Errorf("kubectl mntleak %s: exit %d, stderr %q; want exit %d and one line starting %q", strings.Join(c.args, " "), r.code, r.stderr, c.code, c.line)
		}
		if c.args[0] == "audit" && r.stdout != "node ghost: no mntleak pod on this node: not audited\n" {
			t.Errorf("audit --node ghost: %q", r.stdout)
		}
	}

	// release --apply through the plugin: csi-node made the tmpfs in its
	// own namespace and the node has it too (in-use, no copy is a leak):
	// nothing is detached, and the kernel shows it so.
	s := stuckPod{ns: plugShop, name: "web", object: nested, holderPID: holderPID, holderNS: nsLink, inHolder: inHolder, onNode: mounter.HostPath}
	dry, applied := applyOnInUse(t, n, plugin, kc, s)
	keep(t, "release-web.txt", "$ kubectl mntleak release pod/web -n "+plugShop+"\n"+dry.stderr+dry.stdout+
		"\n$ kubectl mntleak release pod/web -n "+plugShop+" --apply\n"+applied.stderr+applied.stdout)
	// The finding's fix, on the node: the unmount reaches csi-node's copy
	// (a peer of the node's), and the kubelet's next retry ends web.
	if err := unix.Unmount(mounter.HostPath, 0); err != nil {
		t.Fatalf("umount %s: %v", mounter.HostPath, err)
	}
	if ms, err := k8snode.MountsUnder(holderPID, inHolder); err != nil || len(ms) != 0 {
		t.Errorf("csi-node's namespace (pid %d) still has %d mounts at %s after the node's unmount (%v)", holderPID, len(ms), inHolder, err)
	}
	// The kubelet retries a failed teardown with a growing delay, at most
	// 2m2s: web was stuck for minutes while the image was built.
	if !n.WaitPodGone(plugShop, victim.Name, 150*time.Second) {
		t.Errorf("pod %s/web still there 150 s after the tmpfs was unmounted on the node", plugShop)
	}

	// A leaked copy released by release --apply in the DaemonSet's pod,
	// through the exec subresource, as the plugin runs it.
	inPod := releaseInThePod(t, n, daemonPod, state)
	keep(t, "release-in-pod.txt", inPod.stdout+inPod.stderr)

	// A pod's leaked copy released by the pod's name, end to end.
	vaultDry, vaultApplied := releaseByPodName(t, n, plugin, kc)
	keep(t, "release-vault.txt", "$ kubectl mntleak release pod/vault -n "+plugShop+"\n"+vaultDry.stderr+vaultDry.stdout+
		"\n$ kubectl mntleak release pod/vault -n "+plugShop+" --apply\n"+vaultApplied.stderr+vaultApplied.stdout)
}
