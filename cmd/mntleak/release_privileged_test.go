package main

import (
	"bytes"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestRelease builds a leak for real and releases it: the dry run changes
// nothing and prints the plan; --apply detaches the copy, the failing
// operation (mkfs.ext4 on the device) then succeeds, and the holder keeps
// running. The refusals: a mount in the caller's own namespace (in use, not
// a leak), a copy a process has an open file in (unless --force), a mount
// id that changed between the plan and the act, the host's namespace.
func TestRelease(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "mount", "umount", "mkfs.ext4", "nsenter", "unshare")
	bin := privtest.Binary(t)
	tests := []struct {
		name     string
		script   string                                                                          // the holder's
		prepare  func(t *testing.T, node privtest.Node, h *privtest.Holder, vol string) []string // extra args instead of the device
		args     []string
		unmount  bool // the node unmounts (the leak); else the mount stays in the caller's namespace
		wantCode int
		want     string // in stdout
		released bool   // mkfs.ext4 succeeds afterwards
	}{
		{name: "dry run", script: "cd /", unmount: true, wantCode: exitOK, want: "dry run: nothing changed"},
		{name: "apply", script: "cd /", args: []string{"--apply"}, unmount: true, wantCode: exitOK, want: "released: mount", released: true},
		{name: "in use in the caller's namespace", script: "cd /", args: []string{"--apply"}, wantCode: exitError, want: "refused"},
		{name: "an open file in the copy", script: "exec 3<VOL/file", args: []string{"--apply"}, unmount: true, wantCode: exitError,
			want: "processes work in the copy"},
		// Detached, but the open file keeps the filesystem busy: the copy is
		// gone from the namespace, the device stays busy until it is closed.
		{name: "an open file, forced", script: "exec 3<VOL/file", args: []string{"--apply", "--force"}, unmount: true, wantCode: exitOK,
			want: "released: mount"},
		{name: "the mount id changed", script: "cd /", unmount: true, wantCode: exitError, want: "refused: mnt:[",
			prepare: func(t *testing.T, node privtest.Node, h *privtest.Holder, vol string) []string {
				id := copyID(t, h.PID, vol)
				// Remounted in between: the copy is another mount now.
				in := []string{"-t", strconv.Itoa(h.PID), "-m", "--"}
				dev := strings.TrimSpace(privtest.Run(t, "nsenter", append(in, "findmnt", "-n", "-o", "SOURCE", vol)...))
				privtest.Run(t, "nsenter", append(in, "umount", vol)...)
				privtest.Run(t, "nsenter", append(in, "mount", dev, vol)...)
				return []string{"--apply", "--mntns", strconv.FormatUint(uint64(h.MntNS), 10), "--mount-id", strconv.Itoa(id)}
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			dev := privtest.LoopDevice(t, 16)
			vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
			node := privtest.StartNode(t)
			node.Run(t, "mount", dev, vol)
			node.Run(t, "sh", "-c", "echo data >"+vol+"/file")
			laterMount(t, node, dir)
			h := node.StartHolder(t, "private", strings.ReplaceAll(tt.script, "VOL", vol))
			if tt.unmount {
				node.Run(t, "umount", vol)
			}
			args := append([]string{"release", "--state-dir", ""}, tt.args...)
			if tt.prepare != nil {
				args = append([]string{"release", "--state-dir", ""}, tt.prepare(t, node, h, vol)...)
			} else {
				args = append(args, dev)
			}
			// Run from inside the node: its namespace is the caller's.
			cmd := exec.Command("nsenter", append([]string{"-t", strconv.Itoa(node.PID), "-m", "--", bin}, args...)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			code := 0
			if ee, ok := err.(*exec.ExitError); ok {
				code = ee.ExitCode()
			}
			t.Logf("exit %d\n%s%s", code, stdout.String(), stderr.String())
			if code != tt.wantCode || !strings.Contains(stdout.String(), tt.want) {
				t.Fatalf("exit %d, stdout %q; want exit %d and %q", code, stdout.String(), tt.wantCode, tt.want)
			}
			if syscall.Kill(h.PID, 0) != nil {
				t.Error("the holder did not keep running")
			}
			mkfsErr := mkfsIn(node, dev)
			if tt.released != (mkfsErr == nil) {
				t.Errorf("mkfs.ext4 after release: %v (released %v)", mkfsErr, tt.released)
			}
		})
	}
	t.Run("the command a finding carries", func(t *testing.T) {
		dir := t.TempDir()
		dev := privtest.LoopDevice(t, 16)
		vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
		node := privtest.StartNode(t)
		node.Run(t, "mount", dev, vol)
		laterMount(t, node, dir)
		h := node.StartHolder(t, "private", "cd /")
		node.Run(t, "umount", vol)
		in := []string{"-t", strconv.Itoa(node.PID), "-m", "--", bin}
		out, _ := exec.Command("nsenter", append(in, "why", "--json", "--state-dir", "", dev)...).Output()
		var f struct{ Release string }
		if err := json.Unmarshal(out, &f); err != nil || !strings.HasPrefix(f.Release, "mntleak release --mntns "+strconv.FormatUint(uint64(h.MntNS), 10)) {
			t.Fatalf("why's finding carries release %q (%v): %s", f.Release, err, out)
		}
		args := append(strings.Fields(f.Release)[1:], "--state-dir", "", "--apply")
		if out, err := exec.Command("nsenter", append(in, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v\n%s", f.Release, err, out)
		}
		if err := mkfsIn(node, dev); err != nil {
			t.Errorf("mkfs.ext4 after %s --apply: %v", f.Release, err)
		}
	})
	t.Run("the host's namespace", func(t *testing.T) {
		dir := t.TempDir()
		dev := privtest.LoopDevice(t, 16)
		vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
		// A namespace made before the mount, where it never shows; the
		// mount is in this test's (the host's) namespace, and release runs
		// from the other one: the host's mount is never touched.
		other := privtest.StartHolder(t, "private", "true")
		privtest.Run(t, "mount", dev, vol)
		defer privtest.Run(t, "umount", vol)
		cmd := exec.Command("nsenter", "-t", strconv.Itoa(other.PID), "-m", "--", bin, "release", "--state-dir", "", "--apply", dev)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != exitError || !strings.Contains(string(out), "the host's namespace") {
			t.Errorf("exit %d: %s", cmd.ProcessState.ExitCode(), out)
		}
	})
	t.Run("bad input", func(t *testing.T) {
		for _, args := range [][]string{{"release"}, {"release", "--mntns", "5"}, {"release", "--mount-id", "3", "--mntns", "4", "/x"}, {"release", "/no/such/path"},
			{"release", "--finding", "0123456789ab", "--state-dir", t.TempDir()}, {"release", "--finding", "/etc/hostname"}, {"release", "--finding", "-", "/x"}, {"release", "--mntns-id", "5", "/x"}} {
			if code := run(args[1:], new(bytes.Buffer), new(bytes.Buffer)); code != exitUsage && args[0] == "release" {
				cmd := exec.Command(bin, args...)
				cmd.Run()
				if cmd.ProcessState.ExitCode() != exitUsage {
					t.Errorf("%v: exit %d, want %d", args, cmd.ProcessState.ExitCode(), exitUsage)
				}
			}
		}
	})
}

// copyID is the mount id of vol in pid's namespace.
func copyID(t *testing.T, pid int, vol string) int {
	t.Helper()
	out := privtest.Run(t, "nsenter", "-t", strconv.Itoa(pid), "-m", "--", "findmnt", "-n", "-o", "ID", vol)
	id, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		t.Fatalf("mount id of %s: %q", vol, out)
	}
	return id
}
