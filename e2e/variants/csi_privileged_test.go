package variants

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/findingset"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

// csiVolume is a cell's CSI volume: its device, the kubelet's staging
// path, the plugin's own path, and the programs named as the plugin and
// the kubelet (copies of mount(8) and umount(8): their mount and unmount
// carry those names).
type csiVolume struct {
	dev, staging, own string
	plugin, kubelet   string
}

func newCSIVolume(t *testing.T, own string) csiVolume {
	t.Helper()
	dir := t.TempDir()
	bin := privtest.Mkdir(t, filepath.Join(dir, "bin"))
	if own == "" {
		own = filepath.Join(dir, "plugins/csi.example.com/mounts/pvc-1")
	}
	return csiVolume{
		dev:     privtest.LoopDevice(t, 16),
		staging: privtest.Mkdir(t, filepath.Join(dir, "plugins/kubernetes.io/csi/pv/pvc-1/globalmount")),
		own:     own,
		plugin:  privtest.CopyBinary(t, "mount", filepath.Join(bin, "csi-node")),
		kubelet: privtest.CopyBinary(t, "umount", filepath.Join(bin, "kubelet")),
	}
}

// runIn runs name in the mount namespace of pid.
func runIn(t *testing.T, pid int, name string, args ...string) string {
	t.Helper()
	return privtest.Run(t, "nsenter", append([]string{"-t", strconv.Itoa(pid), "-m", "--", name}, args...)...)
}

// teardownFails is the device's teardown in the node: mkfs.ext4 forced
// past its check of the node's mount table (-F -F) opens the device with
// O_EXCL, which fails with EBUSY while any mount of it stays.
func (v csiVolume) teardownFails(t *testing.T, node privtest.Node) {
	t.Helper()
	out, err := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", "-F", v.dev).CombinedOutput()
	if err == nil || !strings.Contains(string(out), "busy") {
		t.Fatalf("mkfs.ext4 %s with the volume mounted: %v, %s; want EBUSY", v.dev, err, out)
	}
}

// TestCSIPluginMountsTwice: a CSI node plugin (a process named csi-node)
// mounts a volume at the kubelet's staging path and a second time at a
// path of its own; the kubelet's unmount of the staging path succeeds and
// the device's teardown then fails with EBUSY. The failure is one
// double-mount finding naming both mounts, the processes that made them
// and the unmount; where the second mount is the plugin's container's
// own (its namespace publishes the staging mount to the node, keeps the
// other), the kubelet's unmount is also one leak of that cause, and the
// fix enters the plugin's namespace.
func TestCSIPluginMountsTwice(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "nsenter", "mount", "umount", "mkfs.ext4", "losetup", "findmnt")
	t.Run("in the node's namespace", func(t *testing.T) {
		for _, how := range []string{"the device again", "a bind of the staging path"} {
			t.Run(how, func(t *testing.T) {
				node := privtest.StartNode(t)
				l := startTracing(t)
				v := newCSIVolume(t, "")
				privtest.Mkdir(t, v.own)
				t.Cleanup(func() {
					_ = exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", "-l", v.own).Run()
					_ = exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", "-l", v.staging).Run()
				})
				node.Run(t, v.plugin, v.dev, v.staging)
				if how == "a bind of the staging path" {
					node.Run(t, v.plugin, "--bind", v.staging, v.own)
				} else {
					node.Run(t, v.plugin, v.dev, v.own)
				}
				node.Run(t, v.kubelet, v.staging)
				v.teardownFails(t, node)
				l.settle(t, true)
				got := findingset.Objects{Paths: []string{v.dev, v.staging, v.own}}.Of(l.all())
				findingset.Exact(t, got, []findingset.Want{{Kind: finding.KindFailure, Syscall: "openat", Cause: finding.CauseDoubleMount,
					NS: node.MntNS, Event: "mount"}})
				v.check(t, l, got, "umount "+v.own)
			})
		}
	})
	t.Run("the second mount in the plugin's namespace", func(t *testing.T) {
		node := privtest.StartNode(t)
		l := startTracing(t)
		own := filepath.Join(t.TempDir(), "csi")
		v := newCSIVolume(t, own+"/mounts/pvc-1")
		privtest.Mkdir(t, own)
		t.Cleanup(func() {
			_ = exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", "-l", v.staging).Run()
		})
		// The plugin's container: its kubelet directory is Bidirectional
		// (a peer of the node's), its own directory private.
		plugin := node.StartHolder(t, "shared", "mount -t tmpfs csi-own "+own+" && mount --make-private "+own+" && mkdir -p "+v.own)
		t.Cleanup(func() {
			_ = exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", "-l", own).Run()
		})
		// The plugin's namespace, a shared copy of the node's, also holds
		// the copies of whatever else the node has (another package's pod
		// volumes): the cell's findings are those about its paths.
		o := objects{paths: []string{v.dev, v.staging, v.own}, ids: []uint64{findingset.BirthID(t, plugin.PID)}}
		runIn(t, plugin.PID, v.plugin, v.dev, v.staging)
		runIn(t, plugin.PID, v.plugin, v.dev, v.own)
		if out := node.Run(t, "findmnt", "-rn", "-o", "SOURCE", v.staging); strings.TrimSpace(out) != v.dev {
			t.Fatalf("the plugin's staging mount did not reach the node: %q", out)
		}
		node.Run(t, v.kubelet, v.staging)
		v.teardownFails(t, node)
		l.settle(t, true)
		got := o.set().Of(l.all())
		want := findingset.Want{Cause: finding.CauseDoubleMount, NS: plugin.MntNS, NSID: o.ids[0], Event: "mount",
			PID: plugin.PID, Role: finding.RoleMember, Fix: plugin.PID}
		leak, failure := want, want
		leak.Kind, leak.Syscall = finding.KindLeak, "umount2"
		failure.Kind, failure.Syscall = finding.KindFailure, "openat"
		findingset.Exact(t, got, []findingset.Want{leak, failure})
		v.check(t, l, got, "nsenter -t "+strconv.Itoa(plugin.PID)+" -m umount "+v.own)
	})
}

// check: each finding agrees with the oracle, and names both mounts, the
// plugin and the kubelet, and the unmount to run.
func (v csiVolume) check(t *testing.T, l *live, got []*finding.Finding, fix string) {
	t.Helper()
	for _, f := range got {
		l.oracle.Check(t, f)
		t.Log(f.Line())
		for _, want := range []string{v.staging, v.own, "csi-node[", "kubelet["} {
			if !strings.Contains(f.Summary, want) {
				t.Errorf("the summary does not say %q: %s", want, f.Summary)
			}
		}
		if !strings.Contains(f.Fix, fix) || !strings.Contains(f.Fix, "NodeUnstageVolume") {
			t.Errorf("the fix lacks %q and the plugin's duty: %s", fix, f.Fix)
		}
	}
}
