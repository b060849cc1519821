package incluster

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/oracle"
	"github.com/mntleak/mntleak/e2e/oraclecheck"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	releasepkg "github.com/mntleak/mntleak/release"
)

// stuckPod is a pod stuck Terminating by a mount another pod made inside
// its volume, and where the kernel shows that mount.
type stuckPod struct {
	ns, name  string
	object    string // the answer's name of the mount (a mount inside volume …)
	holderPID int    // the process of the pod that made it
	holderNS  string // its namespace, mnt:[N]
	inHolder  string // the mount point there
	onNode    string // the mount point in the node's namespace
}

// applyOnInUse runs `kubectl mntleak release pod/NAME --apply` for a pod
// whose only holder made the mount itself, which the node still has (in
// use, not a leak): the plugin runs no release (the finding carries no
// release command), says so for the object and exits 1; the kernel shows
// the same mount in the holder's namespace and on the node, the holder's
// process running, the pod still Terminating. A plan (the dry run, just
// before) that would act on another test's namespace (a copy of the pod's
// volume that another package's test made on this shared machine) is not
// applied: it would detach a copy this test did not make. It returns the
// dry run and the --apply.
func applyOnInUse(t *testing.T, n *k8snode.Node, plugin, kc string, s stuckPod) (result, result) {
	t.Helper()
	plan := runCommand(t, plugin, "release", "pod/"+s.name, "-n", s.ns, kc)
	want := s.object + ": no copy release can detach: "
	if mine := linesAbout(plan.stdout, s.object); plan.code != 1 || len(mine) != 1 || !strings.HasPrefix(mine[0], want) {
		t.Errorf("release pod/%s: exit %d, lines about %q: %q; want exit 1, one line starting %q (not applied)", s.name, plan.code, s.object, mine, want)
		return plan, result{}
	}
	if strings.Contains(plan.stdout, ": mntleak release --mntns ") {
		t.Logf("release pod/%s plans to act on another test's namespace: --apply not run on this shared machine", s.name)
		return plan, result{}
	}
	before, err := k8snode.MountsUnder(s.holderPID, s.inHolder)
	if err != nil || len(before) != 1 {
		t.Fatalf("%s (pid %d) has %d mounts at %s (%v), want the tmpfs", s.holderNS, s.holderPID, len(before), s.inHolder, err)
	}
	humanOnly(t, "release pod/"+s.name, plan)
	r := runCommand(t, plugin, "release", "pod/"+s.name, "-n", s.ns, kc, "--apply")
	humanOnly(t, "release pod/"+s.name+" --apply", r)
	if mine := linesAbout(r.stdout, s.object); r.code != 1 || len(mine) != 1 || !strings.HasPrefix(mine[0], want) ||
		strings.Contains(r.stdout, "released: ") {
		t.Errorf("release pod/%s --apply: exit %d, lines about %q: %q; want exit 1, one line starting %q, nothing released", s.name, r.code, s.object, mine, want)
	}
	after, err := k8snode.MountsUnder(s.holderPID, s.inHolder)
	if err != nil || len(after) != 1 || after[0].ID != before[0].ID {
		t.Errorf("after release --apply, %s (pid %d) has %d mounts at %s (%v), want mount %d still", s.holderNS, s.holderPID, len(after), s.inHolder, err, before[0].ID)
	}
	if ms, err := k8snode.MountsUnder(1, s.onNode); err != nil || len(ms) != 1 {
		t.Errorf("after release --apply, the node has %d mounts at %s (%v), want the tmpfs still", len(ms), s.onNode, err)
	}
	if in, err := k8snode.MountNS(s.holderPID); err != nil || in != s.holderNS {
		t.Errorf("after release --apply, the holder's process %d is in %q (%v), want it running in %s", s.holderPID, in, err, s.holderNS)
	}
	if p := n.GetPod(t, s.ns, s.name); p.DeletionTimestamp == "" {
		t.Errorf("pod %s/%s: no deletionTimestamp after release --apply", s.ns, s.name)
	}
	return plan, r
}

// linesAbout are the lines of out about object (kubectl mntleak release
// starts each object's with "OBJECT: ").
func linesAbout(out, object string) []string {
	var mine []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, object+": ") {
			mine = append(mine, l)
		}
	}
	return mine
}

// releaseInThePod leaks a copy on the node and releases it from the
// DaemonSet's pod: this test mounts a tmpfs on the node, a private holder
// namespace copies it, the node unmounts it; `mntleak release --mntns
// --mount-id --apply` with the daemon's --state-dir, run in the pod through
// the exec subresource (the command kubectl mntleak release builds),
// detaches it. The kernel then shows no mount there in the holder's
// namespace, the holder's process running, and the release's record in
// the node's lock directory (the pod's lock is the node's: a release on
// the node and one in the pod act one after the other). It returns what
// the release printed.
func releaseInThePod(t *testing.T, n *k8snode.Node, daemon pod, state string) result {
	t.Helper()
	dir := t.TempDir()
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	privtest.Mount(t, "mntleak-plugin-leak", vol, "tmpfs", 0, "size=1m")
	// A mount the node keeps, copied after vol's: the holder's copy of it
	// shows vol's was copied with the namespace, not made there.
	later := privtest.Mkdir(t, filepath.Join(dir, "later"))
	privtest.Mount(t, "mntleak-plugin-later", later, "tmpfs", 0, "size=1m")
	h := privtest.StartHolder(t, "private", "cd /")
	if err := unix.Unmount(vol, 0); err != nil {
		t.Fatalf("umount %s: %v", vol, err)
	}
	ms, err := k8snode.MountsUnder(h.PID, vol)
	if err != nil || len(ms) != 1 || ms[0].FSType != "tmpfs" {
		t.Fatalf("the holder (pid %d) has %d mounts at %s (%v), want its copy of the tmpfs", h.PID, len(ms), vol, err)
	}
	id := ms[0].ID
	mntns := strconv.FormatUint(uint64(h.MntNS), 10)
	cmd := []string{"exec", "-n", ns, daemon.Metadata.Name, "--", "/mntleak", "release", "--mntns", mntns, "--mount-id", strconv.Itoa(id),
		"--state-dir=" + state, "--apply"}
	out, err := n.KubectlErr(nil, cmd...)
	t.Logf("$ kubectl %s\n%s(%v)", strings.Join(cmd, " "), out, err)
	r := result{stdout: out}
	if err != nil {
		r.stderr, r.code = err.Error()+"\n", 1
	}
	if want := "released: mount " + strconv.Itoa(id) + " at " + vol + " is gone from mnt:[" + mntns + "]\n"; err != nil || !strings.Contains(out, want) {
		t.Errorf("release in the pod: %v, stdout %q; want %q", err, out, want)
	}
	if ms, err := k8snode.MountsUnder(h.PID, vol); err != nil || len(ms) != 0 {
		t.Errorf("after the release, the holder (pid %d) has %d mounts at %s (%v), want none", h.PID, len(ms), vol, err)
	}
	if unix.Kill(h.PID, 0) != nil || privtest.MountNS(t, strconv.Itoa(h.PID)) != h.MntNS {
		t.Errorf("the holder (pid %d) did not keep running in mnt:[%d]", h.PID, h.MntNS)
	}
	if !recorded(t, uint32(h.MntNS), id) {
		t.Errorf("no record of the release of mount %d in mnt:[%d] in the node's %s", id, h.MntNS, releasepkg.LockDir)
	}
	return r
}

// recorded reports whether the node's release lock directory holds the
// record of a release of mount id in namespace mntns.
func recorded(t *testing.T, mntns uint32, id int) bool {
	t.Helper()
	entries, err := os.ReadDir(releasepkg.LockDir)
	if err != nil {
		t.Logf("%s: %v", releasepkg.LockDir, err)
		return false
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(releasepkg.LockDir, e.Name()))
		if err != nil {
			continue // another release's lock, gone since
		}
		var rec releasepkg.Record
		if json.Unmarshal(b, &rec) == nil && rec.MntNS == mntns && rec.MountID == id && !rec.Released.IsZero() {
			return true
		}
	}
	return false
}

// releaseByPodName is `kubectl mntleak release pod/NAME --apply` on a
// real leaked copy of a pod's volume: pod vault's Memory emptyDir (a
// tmpfs) is copied into a private holder namespace on the node (made
// after a later mount of the node's: the proof's witness) that keeps, of
// the node's Kubernetes mounts, only that volume; an immutable file in
// the volume's directory on the node's disk, under the tmpfs (reached
// through a bind of its parent, not recursive), makes the kubelet's
// removal of the directory fail after its unmount, so the kernel does not
// detach the holder's copy at an rmdir and vault stays Terminating, its
// volume leaked. The plugin's dry run names the copy's plan and changes
// nothing; --apply detaches it: the holder's table (the kernel's) no
// longer has it, the holder still runs in its namespace, and the oracle
// finds nothing holding the tmpfs. The file made mutable again, the
// kubelet's retry ends vault. It returns the dry run and the --apply.
func releaseByPodName(t *testing.T, n *k8snode.Node, plugin, kc string) (result, result) {
	t.Helper()
	w := k8snode.MemoryEmptyDirPod(plugShop, "vault")
	n.Apply(t, w.Manifest)
	p := n.WaitPodRunning(t, plugShop, w.Name)
	vol := w.HostDir(p.UID)
	pin := filepath.Join(vol, "pin") // on the disk once the tmpfs is gone
	// Cleanups run last first: the file is mutable again before the
	// namespace's cleanup deletes vault.
	t.Cleanup(func() {
		if err := chattr("-i", pin); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Log(err)
		}
	})
	pinUnder(t, vol)
	dir := t.TempDir()
	later := privtest.Mkdir(t, filepath.Join(dir, "later"))
	privtest.Mount(t, "mntleak-vault-later", later, "tmpfs", 0, "size=1m")
	h := startVolumeHolder(t, vol)
	if ms, err := k8snode.MountsUnder(h.PID, vol); err != nil || len(ms) != 1 || ms[0].FSType != "tmpfs" {
		t.Fatalf("the holder (pid %d) has %d mounts at %s (%v) before vault's deletion, want its copy of vault's tmpfs", h.PID, len(ms), vol, err)
	}
	if !n.DeletePod(t, plugShop, w.Name, false) {
		t.Fatalf("pod %s/%s: no deletionTimestamp after its deletion", plugShop, w.Name)
	}
	privtest.WaitFor(t, 90*time.Second, "the kubelet's unmount of "+vol, func() bool {
		ms, err := k8snode.MountsUnder(os.Getpid(), vol)
		return err == nil && len(ms) == 0
	})
	before, err := k8snode.MountsUnder(h.PID, vol)
	if err != nil || len(before) != 1 || before[0].FSType != "tmpfs" {
		t.Fatalf("the holder (pid %d) has %d mounts at %s (%v) after the kubelet's unmount, want its copy of vault's tmpfs", h.PID, len(before), vol, err)
	}
	// The oracle: the holder's namespace has the tmpfs at vol. Other
	// tests' namespaces on this shared machine may have copied vault's
	// volume too (seen: a container of another package's scenario with
	// the node's /var/lib/kubelet): logged, and allowed after the release.
	target := oracle.Target{Major: uint32(before[0].Major), Minor: uint32(before[0].Minor)}
	var others []uint32
	if a, err := oracle.Holders(target); err != nil {
		t.Errorf("oracle: %v", err)
	} else if hh, ok := a.Holding(uint64(h.MntNS)); !ok || !slices.Contains(hh.Points, vol) {
		t.Errorf("the oracle: %s; want it held in mnt:[%d] at %s", a, h.MntNS, vol)
	} else {
		for _, o := range a.Namespaces {
			if o.Inode != uint64(h.MntNS) {
				others = append(others, uint32(o.Inode))
				t.Logf("another test's namespace mnt:[%d] has vault's tmpfs at %s", o.Inode, strings.Join(o.Points, ", "))
			}
		}
	}
	object := "volume data (emptyDir)"
	want := object + ": mntleak release --mntns " + strconv.FormatUint(uint64(h.MntNS), 10) + " --mount-id " + strconv.Itoa(before[0].ID) + "\n"
	// why names the host process that keeps the volume (issue 29: a pod
	// whose volume a host process keeps), as the kernel shows it.
	whyVault(t, plugin, kc, h, vol)
	// Other tests' namespaces on this shared machine may have copied
	// vault's sandbox (its shm, its netns) until the runtime removes it:
	// --apply would detach those too, or exit 1 for one it cannot. The
	// dry run is read until its plan is the holder's copy alone (the
	// runtime's teardown goes on meanwhile); if it never is, --apply is
	// not run (said so), as applyOnInUse does.
	var dry result
	alone := privtest.Poll(90*time.Second, func() bool {
		dry = runCommand(t, plugin, "release", "pod/"+w.Name, "-n", plugShop, kc)
		return planOnly(dry.stdout, h.MntNS)
	})
	if dry.code != 0 || !strings.HasPrefix(dry.stdout, want) || !strings.Contains(dry.stdout, "dry run: nothing changed") {
		t.Errorf("release pod/%s: exit %d:\n%s\nwant exit 0, %q first and a dry run", w.Name, dry.code, dry.stdout, want)
	}
	humanOnly(t, "release pod/"+w.Name, dry)
	if !alone {
		t.Logf("release pod/%s plans to act on other tests' namespaces for 90 s: --apply not run on this shared machine", w.Name)
		return dry, result{}
	}
	if ms, err := k8snode.MountsUnder(h.PID, vol); err != nil || len(ms) != 1 || ms[0].ID != before[0].ID {
		t.Errorf("after the dry run the holder has %d mounts at %s (%v), want mount %d still", len(ms), vol, err, before[0].ID)
	}
	dryRunAsJSON(t, plugin, kc, w.Name, object, strings.TrimPrefix(strings.TrimSuffix(want, "\n"), object+": "))
	applied := runCommand(t, plugin, "release", "pod/"+w.Name, "-n", plugShop, kc, "--apply")
	humanOnly(t, "release pod/"+w.Name+" --apply", applied)
	gone := "released: mount " + strconv.Itoa(before[0].ID) + " at " + vol + " is gone from mnt:[" + strconv.FormatUint(uint64(h.MntNS), 10) + "]\n"
	if applied.code != 0 || !strings.HasPrefix(applied.stdout, want) || !strings.Contains(applied.stdout, gone) {
		t.Errorf("release pod/%s --apply: exit %d:\n%s\nwant exit 0 and %q", w.Name, applied.code, applied.stdout, gone)
	}
	// The kernel's state: the holder's table has no mount there, the
	// holder runs on in its namespace, and nothing holds vault's tmpfs.
	if ms, err := k8snode.MountsUnder(h.PID, vol); err != nil || len(ms) != 0 {
		t.Errorf("after release --apply the holder (pid %d) has %d mounts at %s (%v), want none", h.PID, len(ms), vol, err)
	}
	if unix.Kill(h.PID, 0) != nil || privtest.MountNS(t, strconv.Itoa(h.PID)) != h.MntNS {
		t.Errorf("the holder (pid %d) did not keep running in mnt:[%d]", h.PID, h.MntNS)
	}
	oraclecheck.New(t).Control(t, target, []string{vol}, others...)
	if err := chattr("-i", pin); err != nil {
		t.Error(err)
	}
	if !n.WaitPodGone(plugShop, w.Name, 150*time.Second) {
		t.Errorf("pod %s/%s still there 150 s after its copy was released and %s made mutable", plugShop, w.Name, pin)
	}
	return dry, applied
}

// whyVault is `kubectl mntleak why pod/vault`: of the objects the holder's
// namespace holds, exactly vault's volume, at vol, held by the holder's
// process (sleep, a host process in no pod); the text form is kept
// (why-vault.txt).
func whyVault(t *testing.T, plugin, kc string, h *privtest.Holder, vol string) {
	t.Helper()
	object := "volume data (emptyDir)"
	r := runCommand(t, plugin, "why", "pod/vault", "-n", plugShop, kc, "--json")
	a := decodeAnswer(t, r)
	if mine := scenarioHeld(t, a, map[uint32]bool{uint32(h.MntNS): true}); r.code != 1 || len(mine) != 1 || mine[0] != object {
		t.Errorf("why pod/vault: exit %d, held by the holder %q; want exit 1, %q", r.code, mine, object)
	}
	for _, held := range a.Held {
		if held.Object.Text != object {
			continue
		}
		named := false
		for _, hh := range held.Finding.Holders {
			for _, p := range hh.Processes {
				named = named || (hh.MntNS == uint32(h.MntNS) && p.PID == h.PID && p.Pod == "" && hh.Where == vol)
			}
		}
		if !named || held.Object.Path != vol {
			t.Errorf("why pod/vault: %s at %s held by %+v; want the holder's pid %d, in no pod, at %s", object, held.Object.Path, held.Finding.Holders, h.PID, vol)
		}
	}
	text := runCommand(t, plugin, "why", "pod/vault", "-n", plugShop, kc)
	keep(t, "why-vault.txt", "$ kubectl mntleak why pod/vault -n "+plugShop+"\n"+text.stderr+text.stdout)
	if !strings.Contains(text.stdout, "\n"+object+" is held:\n") || !strings.Contains(text.stdout, "sleep["+strconv.Itoa(h.PID)+"]") {
		t.Errorf("kubectl mntleak why pod/vault: exit %d; want %q held by sleep[%d]", text.code, object, h.PID)
	}
}

// humanOnly checks that a release's human form has no action record:
// `mntleak release` writes its records on stderr, the plugin leaves them
// out of its human lines (they are in --format json's document, and on
// the node).
func humanOnly(t *testing.T, what string, r result) {
	t.Helper()
	for _, l := range strings.Split(r.stdout+r.stderr, "\n") {
		if strings.HasPrefix(l, `{"action":"release"`) {
			t.Errorf("%s: an action record among the human lines: %s", what, l)
		}
	}
}

// releaseJSON is `kubectl mntleak release --format json`'s document.
type releaseJSON struct {
	Pod, UID, Node string
	Applied        bool
	Objects        []struct {
		Object, Release string
		Exit            int
		Records         []struct {
			Action, Result string
		}
	}
}

// dryRunAsJSON is `kubectl mntleak release pod/NAME --format json` (a dry
// run): one JSON document and nothing else on stdout, with object's
// release command want and the one record of its plan.
func dryRunAsJSON(t *testing.T, plugin, kc, name, object, want string) {
	t.Helper()
	r := runCommand(t, plugin, "release", "pod/"+name, "-n", plugShop, kc, "--format", "json")
	var doc releaseJSON
	if err := json.Unmarshal([]byte(r.stdout), &doc); err != nil || strings.Count(r.stdout, "\n") != 1 {
		t.Fatalf("release pod/%s --format json: exit %d, stdout %q: want one JSON document (%v)", name, r.code, r.stdout, err)
	}
	if strings.Contains(r.stderr, `{"action":"release"`) {
		t.Errorf("release pod/%s --format json: an action record on stderr: %q", name, r.stderr)
	}
	found := false
	for _, o := range doc.Objects {
		if o.Object != object {
			continue
		}
		found = true
		if o.Release != want || o.Exit != 0 || len(o.Records) != 1 || o.Records[0].Action != "release" || o.Records[0].Result != "planned" {
			t.Errorf("release pod/%s --format json: %s: %+v; want release %q, exit 0, one planned record", name, object, o, want)
		}
	}
	if !found || doc.Pod != plugShop+"/"+name || doc.Applied {
		t.Errorf("release pod/%s --format json: %+v; want pod %s/%s, not applied, object %q", name, doc, plugShop, name, object)
	}
}

// planOnly reports whether a release dry run's every object line is a
// release command in namespace mntns (no object it cannot release, no
// copy in another namespace).
func planOnly(out string, mntns uint32) bool {
	own := "mntleak release --mntns " + strconv.FormatUint(uint64(mntns), 10) + " "
	for _, l := range strings.Split(out, "\n") {
		if l == "" || strings.HasPrefix(l, " ") || strings.HasPrefix(l, "{") || strings.HasPrefix(l, "plan: ") ||
			strings.HasPrefix(l, "to act on exactly") || strings.HasPrefix(l, "dry run: ") {
			continue
		}
		if _, cmd, ok := strings.Cut(l, ": "); !ok || !strings.HasPrefix(cmd, own) {
			return false
		}
	}
	return true
}

// pinUnder makes an immutable file in the directory under vol's tmpfs
// (on the node's disk, reached through a bind of vol's parent that does
// not carry the tmpfs): the kubelet's removal of vol fails with EPERM
// after its unmount. The bind is gone when it returns.
func pinUnder(t *testing.T, vol string) {
	t.Helper()
	under := privtest.Mkdir(t, filepath.Join(t.TempDir(), "under"))
	if err := unix.Mount(filepath.Dir(vol), under, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind %s: %v", filepath.Dir(vol), err)
	}
	file := filepath.Join(under, filepath.Base(vol), "pin")
	err := os.WriteFile(file, []byte("kept\n"), 0o644)
	if err == nil {
		err = chattr("+i", file)
	}
	if uerr := unix.Unmount(under, unix.MNT_DETACH); uerr != nil {
		t.Errorf("umount %s: %v", under, uerr)
	}
	if err != nil {
		t.Fatal(err)
	}
}

// startVolumeHolder starts a private holder namespace (killed by pid at
// cleanup) that keeps, of the node's Kubernetes mounts, only vol and the
// mounts it lies under: it unmounts the others in its own namespace first,
// so that no other pod's volume stays in it (privtest's private holder
// drops them all, vol's too).
func startVolumeHolder(t *testing.T, vol string) *privtest.Holder {
	t.Helper()
	var keep []string
	for p := vol; p != "/"; p = filepath.Dir(p) {
		keep = append(keep, p)
	}
	cmd := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		`findmnt -rn -o TARGET | grep -E '^(/var/lib/kubelet|/run/mntleak-k8s|/var/lib/mntleak-k8s)(/|$)' | grep -vxF "$KEEP" | sort -r |
while read -r m; do umount -l "$m" 2>/dev/null; done; echo ready && exec sleep 600`)
	cmd.Env = append(os.Environ(), "KEEP="+strings.Join(keep, "\n"))
	privtest.StartReady(t, cmd, 10*time.Second)
	return &privtest.Holder{Cmd: cmd, PID: cmd.Process.Pid, MntNS: privtest.MountNS(t, strconv.Itoa(cmd.Process.Pid))}
}

// chattr sets or clears a file's attribute (+i, -i).
func chattr(attr, file string) error {
	if _, err := os.Stat(file); err != nil {
		return fmt.Errorf("chattr %s: %w", file, err)
	}
	if out, err := exec.Command("chattr", attr, file).CombinedOutput(); err != nil {
		return fmt.Errorf("chattr %s %s: %v: %s", attr, file, err, out)
	}
	return nil
}
