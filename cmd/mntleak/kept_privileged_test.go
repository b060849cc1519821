package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestNamespaceKeptByABindLive: `unshare --mount=FILE` leaves a mount
// namespace no process runs in, kept by the bind of its nsfs file. It
// copied a loop device's mount; the device stays busy after the node
// unmounts it. The finding names that namespace, the bind that keeps it and
// the fix (unmount the bind), and no process as its holder. A second
// device the namespace keeps is explained the same way afterwards: the
// daemon reading the namespace's table (a thread of its own enters it) does
// not make the daemon a process of that namespace.
func TestNamespaceKeptByABindLive(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "mkfs.ext4")
	dir := t.TempDir()
	dev := privtest.LoopDevice(t, 16)
	dev2 := privtest.LoopDevice(t, 16)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	vol2 := privtest.Mkdir(t, filepath.Join(dir, "vol2"))
	pins := privtest.Mkdir(t, filepath.Join(dir, "pins"))
	d := privtest.StartDaemon(t, nil, "--journald", "off", "--state-dir", "")
	node := privtest.StartNode(t)
	node.Run(t, "mount", dev, vol)
	node.Run(t, "mount", dev2, vol2)
	// An nsfs bind must not sit on a shared mount: a private one for it.
	node.Run(t, "mount", "--bind", pins, pins)
	node.Run(t, "mount", "--make-private", pins)
	file := filepath.Join(pins, "mnt")
	node.Run(t, "touch", file)
	node.KeepNamespace(t, file)
	node.Run(t, "umount", vol)
	node.Run(t, "umount", vol2)
	checkKeptFinding(t, d, node, dev, file)
	// An engineer looks inside (a runtime, ip netns exec, another mntleak
	// reading it do the same): the namespace it enters is the same one,
	// with the same recorded creation.
	node.Run(t, "nsenter", "--mount="+file, "true")
	checkKeptFinding(t, d, node, dev2, file)
	d.Stop(t)
}

// checkKeptFinding fails mkfs on dev and checks the finding names the
// namespace kept by the bind at file and its recorded creation as the
// cause.
func checkKeptFinding(t *testing.T, d *privtest.Daemon, node privtest.Node, dev, file string) {
	t.Helper()
	mkfs := exec.Command("nsenter", "-t", fmt.Sprint(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", dev)
	if out, err := mkfs.CombinedOutput(); err == nil {
		t.Fatalf("mkfs.ext4 on a device a kept namespace still has mounted succeeded: %s", out)
	}
	isFinding := func(s string) bool {
		return strings.Contains(s, `"finding":"failure"`) && strings.Contains(s, `"path":"`+dev+`"`)
	}
	if !d.Logs.Within(15*time.Second, isFinding) {
		d.Stop(t)
		for _, l := range d.Logs.All() {
			t.Log(l)
		}
		t.Fatalf("no failure finding on %s", dev)
	}
	line, _ := d.Logs.Find(isFinding)
	var f struct {
		Msg       string
		Cause     string
		HolderPID int `json:"holder_pid"`
		Detail    struct {
			Holders []struct {
				KeptBy string `json:"kept_by"`
			}
			Fix string
		}
	}
	if err := json.Unmarshal([]byte(line), &f); err != nil {
		t.Fatal(err)
	}
	t.Log(f.Msg)
	switch {
	case len(f.Detail.Holders) == 0 || !strings.Contains(f.Detail.Holders[0].KeptBy, "nsfs file at "+file):
		t.Errorf("holders %+v: want one kept by the bind at %s", f.Detail.Holders, file)
	case f.Cause != "unshare" || strings.Contains(f.Msg, "predates tracing"):
		t.Errorf("cause %s: want unshare, the namespace's recorded creation", f.Cause)
	case f.HolderPID != 0:
		t.Errorf("holder_pid %d named for a namespace no process runs in", f.HolderPID)
	case !strings.HasPrefix(f.Detail.Fix, "umount "+file):
		t.Errorf("fix %q, want umount %s first", f.Detail.Fix, file)
	}
}
