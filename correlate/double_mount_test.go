package correlate_test

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// The kubelet's staging path of a CSI volume (NodeStageVolume's target)
// and the plugin's own directory, where a plugin mounts the volume a
// second time.
const (
	csiStaging   = "/var/lib/kubelet/plugins/kubernetes.io/csi/pv/pvc-1/globalmount"
	csiPluginDir = "/var/lib/kubelet/plugins/csi.example.com/mounts/pvc-1"
)

// csiNodeTable is the node with the volume (/dev/loop0) at its staging
// path and again at the plugin's directory; without the staging line,
// after the kubelet unmounted it.
const csiNodeTable = `1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw
2 1 0:5 / /tmp rw shared:2 - tmpfs tmpfs rw
5 1 7:0 / ` + csiStaging + ` rw shared:5 - ext4 /dev/loop0 rw
6 1 7:0 / ` + csiPluginDir + ` rw shared:6 - ext4 /dev/loop0 rw
`

var csiNodeUnstaged = strings.Replace(csiNodeTable, "5 1 7:0 / "+csiStaging+" rw shared:5 - ext4 /dev/loop0 rw\n", "", 1)

// TestVolumeMountedTwiceByThePlugin: a CSI node plugin mounts the volume
// at the kubelet's staging path and a second time at a path of its own
// (the device again, or a bind of the staging path); the kubelet's
// unmount of the staging path succeeds and leaves the other, so the
// device's teardown (mkfs.ext4's exclusive open, rbd unmap) fails with
// EBUSY. The finding names both mounts, the process that made each and
// when, the unmount, and the fix: unmount the remaining one, and the
// plugin's NodeUnstageVolume must unmount what its NodeStageVolume made.
func TestVolumeMountedTwiceByThePlugin(t *testing.T) {
	second := map[string]*event.Event{
		"the device again":           mountEv(300, "csi-node", hostNS, "/dev/loop0", csiPluginDir, "ext4", 0, 0),
		"a bind of the staging path": mountEv(300, "csi-node", hostNS, csiStaging, csiPluginDir, "", unix.MS_BIND, 0),
	}
	for name, again := range second {
		t.Run(name, func(t *testing.T) {
			w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(300, "csi-node", hostNS, "/kubepods/pod-csi/ctr")},
				map[uint32]string{hostNS: hostWithoutVol})
			staged := mountEv(300, "csi-node", hostNS, "/dev/loop0", csiStaging, "ext4", 0, 0)
			w.proc.tables[hostNS] = csiNodeTable
			w.send(staged, again)
			w.proc.tables[hostNS] = csiNodeUnstaged
			unstaged := umountEv(400, "kubelet", hostNS, csiStaging, 0)
			w.send(unstaged)
			w.c.Flush()
			if len(w.findings) != 0 {
				t.Fatalf("the kubelet's unmount, with the volume still mounted in its own namespace, is a finding: %s", w.findings[0].Line())
			}
			w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
			f := w.only()
			t.Log(f.Line())
			if f.Cause != finding.CauseDoubleMount {
				t.Fatalf("cause %s, want %s: %s", f.Cause, finding.CauseDoubleMount, f.Line())
			}
			for _, want := range []string{csiStaging, csiPluginDir, "csi-node[300]", "kubelet[400]",
				finding.Clock(staged.Time), finding.Clock(again.Time), finding.Clock(unstaged.Time)} {
				if !strings.Contains(f.Summary, want) {
					t.Errorf("the summary does not say %q: %s", want, f.Summary)
				}
			}
			for _, want := range []string{"umount " + csiPluginDir, "NodeUnstageVolume"} {
				if !strings.Contains(f.Fix, want) {
					t.Errorf("the fix lacks %q: %s", want, f.Fix)
				}
			}
			for _, ev := range []*event.Event{staged, again, unstaged} {
				if !citesEventAt(f, ev) {
					t.Errorf("the %s of %s by %s[%d] is not cited: %+v", ev.Kind, ev.Target, ev.Comm, ev.PID, f.Evidence)
				}
			}
		})
	}
}

// citesEventAt reports whether the finding cites ev itself (its kind,
// process and time).
func citesEventAt(f *finding.Finding, ev *event.Event) bool {
	for _, e := range f.Evidence {
		if e.Event != nil && e.Event.Kind == ev.Kind.String() && e.Event.PID == ev.PID && e.Event.MonoNS == ev.MonoNS {
			return true
		}
	}
	return false
}

// TestVolumeMountedTwiceAcrossNamespaces: the plugin runs in a container
// of its own (mnt:[90]) whose /var/lib/kubelet is Bidirectional: its
// mount at the staging path shows on the node too, its second mount, at a
// directory of the container's own, only in its namespace. The kubelet's
// unmount of the staging path on the node succeeds; the device's teardown
// then fails with EBUSY: the finding names the mount in mnt:[90], both
// mounts' maker, and the unmount to run there.
func TestVolumeMountedTwiceAcrossNamespaces(t *testing.T) {
	const pluginNS = 90
	const pluginOwn = "/csi/mounts/pvc-1"
	pluginTable := "40 39 0:60 / / rw - overlay overlay rw\n41 40 254:0 /var/lib/kubelet /var/lib/kubelet rw shared:1 - ext4 /dev/vda rw\n" +
		"42 41 7:0 / " + csiStaging + " rw shared:5 - ext4 /dev/loop0 rw\n43 40 7:0 / " + pluginOwn + " rw - ext4 /dev/loop0 rw\n"
	nodeStaged := hostWithoutVol + "5 1 7:0 / " + csiStaging + " rw shared:5 - ext4 /dev/loop0 rw\n"
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, ""), proc(300, "csi-node", pluginNS, "")},
		map[uint32]string{hostNS: hostWithoutVol, pluginNS: pluginTable})
	staged := mountEv(300, "csi-node", pluginNS, "/dev/loop0", csiStaging, "ext4", 0, 0)
	again := mountEv(300, "csi-node", pluginNS, "/dev/loop0", pluginOwn, "ext4", 0, 0)
	w.proc.tables[hostNS] = nodeStaged
	w.send(staged, again)
	w.proc.tables[hostNS] = hostWithoutVol
	w.proc.tables[pluginNS] = strings.Replace(pluginTable, "42 41 7:0 / "+csiStaging+" rw shared:5 - ext4 /dev/loop0 rw\n", "", 1)
	unstaged := umountEv(400, "kubelet", hostNS, csiStaging, 0)
	w.send(unstaged)
	w.c.Flush()
	leak := w.only()
	t.Log(leak.Line())
	if leak.Kind != finding.KindLeak || leak.Cause != finding.CauseDoubleMount {
		t.Fatalf("at the unmount: %s %s, want a leak of cause double-mount: %s", leak.Kind, leak.Cause, leak.Line())
	}
	w.findings = nil
	w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
	f := w.only()
	t.Log(f.Line())
	if f.Cause != finding.CauseDoubleMount || strings.Contains(f.Summary, "not a leak") {
		t.Fatalf("cause %s, want double-mount of a mount elsewhere: %s", f.Cause, f.Line())
	}
	for _, want := range []string{csiStaging, pluginOwn, "csi-node[300]", "kubelet[400]", "mnt:[90]"} {
		if !strings.Contains(f.Summary, want) {
			t.Errorf("the summary does not say %q: %s", want, f.Summary)
		}
	}
	if want := "nsenter -t 300 -m umount " + pluginOwn; !strings.Contains(f.Fix, want) {
		t.Errorf("the fix lacks %q: %s", want, f.Fix)
	}
	for _, ev := range []*event.Event{staged, again, unstaged} {
		if !citesEventAt(f, ev) {
			t.Errorf("the %s of %s by %s[%d] is not cited: %+v", ev.Kind, ev.Target, ev.Comm, ev.PID, f.Evidence)
		}
	}
}

// TestVolumeMountedAgainAfterItsUnmount: a volume unmounted at one path
// and only then mounted at another was never mounted twice: the teardown
// that fails on the second mount is in-use, as before.
func TestVolumeMountedAgainAfterItsUnmount(t *testing.T) {
	w := newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostWithoutVol})
	w.proc.tables[hostNS] = strings.Replace(csiNodeTable, "6 1 7:0 / "+csiPluginDir+" rw shared:6 - ext4 /dev/loop0 rw\n", "", 1)
	w.send(mountEv(300, "csi-node", hostNS, "/dev/loop0", csiStaging, "ext4", 0, 0))
	w.proc.tables[hostNS] = hostWithoutVol
	w.send(umountEv(400, "kubelet", hostNS, csiStaging, 0))
	w.proc.tables[hostNS] = csiNodeUnstaged
	w.send(mountEv(300, "csi-node", hostNS, "/dev/loop0", csiPluginDir, "ext4", 0, 0))
	w.c.Flush()
	w.findings = nil
	w.send(failEv(50, "mkfs.ext4", hostNS, 257, "/dev/loop0", int64(unix.EBUSY)))
	if f := w.only(); f.Cause != finding.CauseInUse {
		t.Errorf("cause %s, want %s: %s", f.Cause, finding.CauseInUse, f.Line())
	}
}
