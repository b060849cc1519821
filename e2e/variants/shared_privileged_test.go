package variants

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"

	"github.com/mntleak/mntleak/finding"
)

// TestSharedPropagationHolder builds the shape seen on a real kubelet: a
// pod with a Bidirectional hostPath of the kubelet directory (a CSI node
// plugin) mounts into the volume directory of another pod; the mount
// propagates to the node (and into that pod's container, HostToContainer);
// the pod is deleted and the kubelet's rmdir of its volume directory fails
// with EBUSY. The finding must name the namespace that made the mount and
// the process to act on there: the one that made it while it runs, else
// that namespace's oldest process; when that namespace is gone, nobody,
// and the fix is to unmount the copy on the node. (A real kubelet printed
// holder_pid: null and led with its own namespace.)
func TestSharedPropagationHolder(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "rmdir", "sh", "sleep")
	for _, tt := range []struct {
		name       string
		mounterEnd bool // the process that made the mount exits
		pluginEnd  bool // and its namespace with it
	}{
		{"the mounter runs", false, false},
		{"the mounter exited, its namespace lives", true, false},
		{"the mounter's namespace is gone", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			kubelet := privtest.Mkdir(t, filepath.Join(dir, "kubelet"))
			volume := privtest.Mkdir(t, filepath.Join(kubelet, "pods", "b", "volumes", "kubernetes.io~empty-dir", "x"))
			pluginView := privtest.Mkdir(t, filepath.Join(dir, "plugin", "var-lib-kubelet"))
			podView := privtest.Mkdir(t, filepath.Join(dir, "pod-b", "data"))
			node := privtest.StartNode(t)
			node.Run(t, "mount", "--bind", kubelet, kubelet)
			node.Run(t, "mount", "--make-shared", kubelet)
			l := startTracing(t)
			// The plugin's container: hostPath kubelet, Bidirectional.
			plugin := node.StartHolder(t, "unchanged", "mount --rbind "+kubelet+" "+pluginView+" && mount --make-rshared "+pluginView)
			// The pod being deleted: its volume, HostToContainer.
			pod := node.StartHolder(t, "slave", "mount --rbind "+volume+" "+podView+" && mount --make-rslave "+podView)
			time.Sleep(200 * time.Millisecond)
			mounter := exec.Command("nsenter", "-t", strconv.Itoa(plugin.PID), "-m", "--", os.Args[0])
			mounter.Env = append(os.Environ(), mountEnv+"="+filepath.Join(pluginView, "pods", "b", "volumes", "kubernetes.io~empty-dir", "x"))
			run(t, mounter)
			l.holderSeen(t)
			kill := func(pid int, cmd *exec.Cmd) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
				_ = cmd.Wait()
			}
			if tt.mounterEnd {
				kill(mounter.Process.Pid, mounter)
			}
			if tt.pluginEnd {
				kill(plugin.PID, plugin.Cmd)
			}
			kill(pod.PID, pod.Cmd) // the pod is deleted
			time.Sleep(300 * time.Millisecond)
			rmdir := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "rmdir", volume)
			if err := rmdir.Run(); err == nil {
				t.Fatalf("rmdir %s succeeded with a mount on it", volume)
			}
			f := l.wait(volume, volume, 5*time.Second, func(f *finding.Finding) bool {
				return f.Kind == finding.KindFailure && f.Call.Syscall == "rmdir"
			})
			if f == nil {
				t.Fatal("no finding for the rmdir")
			}
			t.Log(f.Line())
			h, a := f.Actor()
			switch {
			case f.Cause != finding.CauseSharedPropagation:
				t.Errorf("cause %s, want shared-propagation:\n%s", f.Cause, f.Line())
			case tt.pluginEnd:
				if a != nil {
					t.Errorf("names %s[%d] though the namespace that mounted it is gone:\n%s", a.Comm, a.PID, f.Line())
				}
				if !strings.Contains(f.Fix, "umount "+volume+" here") {
					t.Errorf("fix does not say to unmount it on the node: %s", f.Fix)
				}
			case tt.mounterEnd:
				if a == nil || a.PID != plugin.PID || a.Role != finding.RoleMember || h.MntNS != plugin.MntNS {
					t.Errorf("want member %d in mnt:[%d]; actor %+v:\n%s", plugin.PID, plugin.MntNS, a, f.Line())
				}
			default:
				if a == nil || a.PID != mounter.Process.Pid || a.Role != finding.RoleMounter || h.MntNS != plugin.MntNS {
					t.Errorf("want mounter %d in mnt:[%d]; actor %+v:\n%s", mounter.Process.Pid, plugin.MntNS, a, f.Line())
				}
				if !strings.Contains(f.Fix, "nsenter -t "+strconv.Itoa(mounter.Process.Pid)+" -m umount") {
					t.Errorf("fix does not enter through the mounter: %s", f.Fix)
				}
			}
		})
	}
}
