package incluster

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/k8snode"
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
	r := runCommand(t, plugin, "release", "pod/"+s.name, "-n", s.ns, kc, "--apply")
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
