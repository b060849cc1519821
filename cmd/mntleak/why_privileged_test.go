package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
)

// whyOf runs the real `mntleak why --json` and decodes its finding.
func whyOf(t *testing.T, bin, target string) (int, *finding.Finding) {
	t.Helper()
	cmd := exec.Command(bin, "why", "--json", "--state-dir", "", target)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	code := cmd.ProcessState.ExitCode()
	if code == exitOK {
		return code, nil
	}
	var f finding.Finding
	if err := json.Unmarshal(stdout.Bytes(), &f); err != nil {
		t.Fatalf("why %s: exit %d, stdout %q, stderr %q", target, code, stdout.String(), stderr.String())
	}
	return code, &f
}

func namesPID(f *finding.Finding, ns uint32, pid int) bool {
	for _, h := range f.Holders {
		for _, p := range h.Processes {
			if p.PID == pid && (ns == 0 || h.MntNS == ns) {
				return true
			}
		}
		for _, p := range h.Pins {
			if p.PID == pid {
				return true
			}
		}
	}
	return false
}

// TestWhyOnRealLeaks builds each kind of leak for real and asks `mntleak why`.
func TestWhyOnRealLeaks(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "mount", "umount", "losetup", "mkfs.ext4")
	bin := privtest.Binary(t)

	t.Run("loop device held by a private namespace", func(t *testing.T) {
		dev := privtest.LoopDevice(t, 32)
		dir := privtest.Mkdir(t, filepath.Join(t.TempDir(), "vol"))
		h := privtest.StartHolder(t, "private", "mount "+dev+" "+dir)
		for _, target := range []string{dev, majMinOf(t, dev)} {
			code, f := whyOf(t, bin, target)
			if code != exitError || f == nil || !namesPID(f, h.MntNS, h.PID) || f.Holders[0].Where != dir {
				t.Errorf("why %s: exit %d, %+v", target, code, f)
				continue
			}
			if f.Cause != finding.CauseUnshare || !f.Inferred {
				t.Errorf("why %s: cause %s inferred=%v", target, f.Cause, f.Inferred)
			}
		}
	})

	t.Run("copy detached by rmdir but pinned by a cwd", func(t *testing.T) {
		// In a node namespace of the test's own, so that no namespace made
		// by another test meanwhile takes a copy of the tmpfs.
		node := privtest.StartNode(t)
		mnt := privtest.Mkdir(t, filepath.Join(t.TempDir(), "x"))
		node.Run(t, "mount", "-t", "tmpfs", "mntleak-why-detached", mnt)
		devStr := strings.TrimSpace(node.Run(t, "stat", "-c", "%Hd:%Ld", mnt))
		h := node.StartHolder(t, "private", "cd "+mnt)
		node.Run(t, "umount", mnt)
		node.Run(t, "rmdir", mnt) // detaches the holder's copy
		code, f := whyOf(t, bin, devStr)
		if code != exitError || f == nil || !namesPID(f, 0, h.PID) || f.Cause != finding.CauseBusyCopy {
			t.Fatalf("why %s: exit %d, %+v", devStr, code, f)
		}
		if strings.Contains(f.Line(), "still mounted") {
			t.Errorf("a detached copy is not mounted anywhere: %s", f.Line())
		}
	})

	t.Run("nsfs copy in a private namespace", func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "cni-x")
		if err := os.WriteFile(file, nil, 0o644); err != nil {
			t.Fatal(err)
		}
		if out, err := exec.Command("unshare", "--net="+file, "true").CombinedOutput(); err != nil {
			t.Fatalf("unshare --net: %v %s", err, out)
		}
		t.Cleanup(func() { _ = unix.Unmount(file, unix.MNT_DETACH) })
		h := privtest.StartHolder(t, "private", "true")
		if err := unix.Unmount(file, unix.MNT_DETACH); err != nil {
			t.Fatal(err)
		}
		code, f := whyOf(t, bin, file)
		if code != exitError || f == nil || !namesPID(f, h.MntNS, h.PID) || f.Object.FSType != "" && f.Holders[0].Where != file {
			t.Fatalf("why %s: exit %d, %+v", file, code, f)
		}
	})

	t.Run("stale bind", func(t *testing.T) {
		base := t.TempDir()
		a, b := filepath.Join(base, "a"), filepath.Join(base, "b")
		os.WriteFile(a, []byte("x"), 0o644)
		os.WriteFile(b, nil, 0o644)
		privtest.Mount(t, a, b, "", unix.MS_BIND, "")
		os.Remove(a)
		code, f := whyOf(t, bin, b)
		if code != exitError || f == nil || f.Cause != finding.CauseStaleBind || !strings.Contains(f.Summary, a) {
			t.Fatalf("why %s: exit %d, %+v", b, code, f)
		}
	})

	t.Run("daemon restarted into a slave namespace, a survivor holds the old one", func(t *testing.T) {
		merged := privtest.Mkdir(t, filepath.Join(t.TempDir(), "overlay2", "l1", "merged"))
		// The first generation mounts in its slave namespace and leaves a
		// survivor (the shim); the daemon itself is gone.
		first := privtest.StartHolder(t, "slave", "mount -t tmpfs overlay "+merged)
		privtest.StartHolder(t, "slave", "true") // the second generation
		code, f := whyOf(t, bin, merged)
		if code != exitError || f == nil || !namesPID(f, first.MntNS, first.PID) || f.Holders[0].MntNS != first.MntNS {
			t.Fatalf("why %s: exit %d, %+v", merged, code, f)
		}
	})

	t.Run("clean node", func(t *testing.T) {
		dir := t.TempDir()
		cmd := exec.Command(bin, "why", "--state-dir", "", dir)
		out, _ := cmd.CombinedOutput()
		if cmd.ProcessState.ExitCode() != exitOK || !strings.Contains(string(out), "nothing holds") {
			t.Errorf("why %s on a clean node: exit %d %s", dir, cmd.ProcessState.ExitCode(), out)
		}
	})

	t.Run("bad input", func(t *testing.T) {
		for _, arg := range [][]string{{"/no/such/path"}, {"/dev/null"}, {"garbage:x"}, {}, {"a", "b"}, {"99999:1"}} {
			cmd := exec.Command(bin, append([]string{"why"}, arg...)...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			_ = cmd.Run()
			msg := strings.TrimSpace(stderr.String())
			if cmd.ProcessState.ExitCode() != exitUsage || msg == "" || strings.Contains(msg, "\n") || !strings.HasPrefix(msg, "mntleak why: ") {
				t.Errorf("why %q: exit %d, stderr %q: want one line and exit 2", arg, cmd.ProcessState.ExitCode(), msg)
			}
		}
	})
}

func majMinOf(t *testing.T, path string) string {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&unix.S_IFMT == unix.S_IFBLK {
		return strconv.Itoa(int(unix.Major(st.Rdev))) + ":" + strconv.Itoa(int(unix.Minor(st.Rdev)))
	}
	return strconv.Itoa(int(unix.Major(st.Dev))) + ":" + strconv.Itoa(int(unix.Minor(st.Dev)))
}

// TestHolderReportOfWhy: `mntleak why` on a terminal lists every holding process on
// a line of its own with a count in the headline (a directory pinned by
// five processes once came out as one line with "+2 more"), and never
// names itself, though its own cwd is inside the target.
func TestHolderReportOfWhy(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "sleep")
	bin := privtest.Binary(t)
	dir := privtest.Mkdir(t, filepath.Join(t.TempDir(), "busy"))
	privtest.Mount(t, "tmpfs", dir, "tmpfs", 0, "size=1m")
	var pids []int
	for i := 0; i < 5; i++ {
		cmd := exec.Command("sleep", "600")
		cmd.Dir = dir
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
		pids = append(pids, cmd.Process.Pid)
	}
	why := exec.Command(bin, "why", "--state-dir", "", dir)
	why.Dir = dir // its own cwd pins the target too
	var stdout, stderr bytes.Buffer
	why.Stdout, why.Stderr = &stdout, &stderr
	_ = why.Run()
	if code := why.ProcessState.ExitCode(); code != exitError {
		t.Fatalf("exit %d, want %d (held)\n%s%s", code, exitError, stdout.String(), stderr.String())
	}
	out := stdout.String()
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "HELD "+dir) || !strings.Contains(lines[0], "5 processes") {
		t.Errorf("headline %q: want HELD %s ... 5 processes", lines[0], dir)
	}
	for _, pid := range pids {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, "sleep["+strconv.Itoa(pid)+"]: cwd "+dir) {
				n++
			}
		}
		if n != 1 {
			t.Errorf("sleep[%d] on %d lines, want 1:\n%s", pid, n, out)
		}
	}
	if strings.Contains(out, "mntleak[") || strings.Contains(out, "+2 more") {
		t.Errorf("why names itself or abbreviates:\n%s", out)
	}
	if !strings.Contains(out, "\ncause: in-use\n") {
		t.Errorf("no cause line:\n%s", out)
	}
}

// TestWhyWithoutSight: `why` and `audit` that cannot see the node never
// give an all-clear: run as an unprivileged user, or in a PID namespace of
// their own (a container without hostPID), about a directory a root
// process holds, they find nothing, say what they could not see and why
// (the missing capabilities, the PID namespace), and exit 3; as root the
// same question is answered (exit 1, held in the holder's namespace).
func TestWhyWithoutSight(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "setpriv", "unshare", "sleep")
	bin := privtest.Binary(t)
	base := t.TempDir()
	for _, d := range []string{filepath.Dir(base), base} { // t.TempDir makes both 0700
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := privtest.Mkdir(t, filepath.Join(base, "vol"))
	// Mounted only in a root process's private namespace: the question is
	// answered by reading that namespace's table, which takes privilege.
	privtest.StartHolder(t, "private", "mount -t tmpfs -o size=1m tmpfs "+dir)

	run := func(argv ...string) (int, string, string) {
		cmd := exec.Command(argv[0], argv[1:]...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		_ = cmd.Run()
		return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
	}
	unpriv := []string{"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "--inh-caps=-all", "--bounding-set=-all"}
	ownPIDNS := []string{"unshare", "--pid", "--fork", "--mount", "--mount-proc"}
	for _, tt := range []struct {
		name     string
		argv     []string
		code     int
		stdout   string
		stderrIn []string
	}{
		{"root", []string{bin, "why", "--state-dir", "", dir}, exitError, "HELD " + dir, nil},
		{"unprivileged why", append(append([]string{}, unpriv...), bin, "why", "--state-dir", "", dir), exitBlind,
			"nothing found holding " + dir + " among what could be read", []string{"incomplete view: ", "processes could not be read", "missing CAP_SYS_PTRACE, CAP_DAC_READ_SEARCH"}},
		{"unprivileged audit", append(append([]string{}, unpriv...), bin, "audit"), exitBlind,
			"no leaked mounts among what could be read", []string{"incomplete view: ", "missing CAP_SYS_PTRACE"}},
		{"own PID namespace", append(append([]string{}, ownPIDNS...), bin, "why", "--state-dir", "", dir), exitBlind,
			"nothing found holding " + dir, []string{"not in the host's PID namespace (a container without hostPID)"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(tt.argv...)
			if code != tt.code || !strings.HasPrefix(stdout, tt.stdout) {
				t.Errorf("exit %d, stdout %q; want %d and %q (stderr %q)", code, stdout, tt.code, tt.stdout, stderr)
			}
			for _, want := range tt.stderrIn {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q: %q", want, stderr)
				}
			}
			if tt.code == exitBlind && strings.Count(strings.TrimSpace(stderr), "\n") != 0 {
				t.Errorf("stderr is not one line: %q", stderr)
			}
		})
	}
}
