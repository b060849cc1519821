package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/audit"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// auditOf runs the real `mntleak audit --json` below prefix.
func auditOf(t *testing.T, bin, prefix string) (int, []audit.Item) {
	t.Helper()
	cmd := exec.Command(bin, "audit", "--json", "--path-prefix", prefix)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	var items []audit.Item
	if err := json.Unmarshal(stdout.Bytes(), &items); err != nil {
		t.Fatalf("audit: exit %d, stdout %q, stderr %q", cmd.ProcessState.ExitCode(), stdout.String(), stderr.String())
	}
	return cmd.ProcessState.ExitCode(), items
}

func hasItem(items []audit.Item, kind, what string, pid int) bool {
	for _, it := range items {
		if it.Kind != kind || it.What != what {
			continue
		}
		if pid == 0 {
			return true
		}
		for _, p := range it.Processes {
			if p.PID == pid {
				return true
			}
		}
	}
	return false
}

// TestAudit builds each kind of leak for real and checks what audit says.
func TestAudit(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "mount", "losetup", "mkfs.ext4")
	bin := privtest.Binary(t)

	t.Run("clean", func(t *testing.T) {
		code, items := auditOf(t, bin, t.TempDir())
		if code != exitOK || len(items) != 0 {
			t.Errorf("exit %d, items %+v on a clean tree", code, items)
		}
	})
	t.Run("block device mounted only outside the host namespace", func(t *testing.T) {
		dir := t.TempDir()
		dev := privtest.LoopDevice(t, 32)
		vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
		h := privtest.StartHolder(t, "private", "mount "+dev+" "+vol)
		code, items := auditOf(t, bin, dir)
		if code != exitError || !hasItem(items, "leak", "block-device", h.PID) {
			t.Errorf("exit %d, items %+v", code, items)
		}
	})
	t.Run("netns bound in a private namespace, gone from the host", func(t *testing.T) {
		dir := t.TempDir()
		file := filepath.Join(dir, "cni-x")
		os.WriteFile(file, nil, 0o644)
		if out, err := exec.Command("unshare", "--net="+file, "true").CombinedOutput(); err != nil {
			t.Fatalf("%v %s", err, out)
		}
		t.Cleanup(func() { _ = unix.Unmount(file, unix.MNT_DETACH) })
		h := privtest.StartHolder(t, "private", "true")
		if err := unix.Unmount(file, unix.MNT_DETACH); err != nil {
			t.Fatal(err)
		}
		code, items := auditOf(t, bin, dir)
		if code != exitError || !hasItem(items, "leak", "netns", h.PID) {
			t.Errorf("exit %d, items %+v", code, items)
		}
	})
	t.Run("stale bind", func(t *testing.T) {
		dir := t.TempDir()
		a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
		os.WriteFile(a, []byte("x"), 0o644)
		os.WriteFile(b, nil, 0o644)
		privtest.Mount(t, a, b, "", unix.MS_BIND, "")
		os.Remove(a)
		code, items := auditOf(t, bin, dir)
		if code != exitError || !hasItem(items, "leak", "stale-bind", 0) {
			t.Errorf("exit %d, items %+v", code, items)
		}
	})
	t.Run("namespace kept alive by the survivors of a restarted daemon", func(t *testing.T) {
		dir := t.TempDir()
		for _, d := range []string{"lower", "upper", "work", "merged"} {
			privtest.Mkdir(t, filepath.Join(dir, d))
		}
		shim := privtest.CopyBinary(t, "sleep", filepath.Join(dir, "containerd-shim-runc-v2"))
		opts := "lowerdir=" + dir + "/lower,upperdir=" + dir + "/upper,workdir=" + dir + "/work"
		privtest.StartHolderAs(t, "slave", "mount -t overlay overlay -o "+opts+" "+dir+"/merged", shim)
		code, items := auditOf(t, bin, dir)
		if code != exitError || !hasItem(items, "leak", "survivors", 0) || !hasItem(items, "leak", "overlay", 0) {
			t.Errorf("exit %d, items %+v", code, items)
		}
	})
	t.Run("private bind of / in a container-like namespace", func(t *testing.T) {
		dir := t.TempDir()
		host := privtest.Mkdir(t, filepath.Join(dir, "rootfs", "host"))
		h := privtest.StartHolder(t, "unchanged", "mount --rbind / "+host+" && mount --make-rprivate "+host)
		code, items := auditOf(t, bin, dir)
		if !hasItem(items, "risk", "private-hostpath", h.PID) {
			t.Errorf("exit %d, items %+v", code, items)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, args := range [][]string{{"audit", "extra"}, {"audit", "--path-prefix", "relative"}, {"audit", "--nope"}} {
			cmd := exec.Command(bin, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			_ = cmd.Run()
			if cmd.ProcessState.ExitCode() != exitUsage || strings.TrimSpace(stderr.String()) == "" {
				t.Errorf("%q: exit %d, stderr %q", args, cmd.ProcessState.ExitCode(), stderr.String())
			}
		}
	})
}
