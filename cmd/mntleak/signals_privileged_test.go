package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// bpfLinks returns the ids of the BPF links a process holds, from the
// fdinfo of its descriptors.
func bpfLinks(t *testing.T, pid int) []string {
	t.Helper()
	dir := fmt.Sprintf("/proc/%d/fdinfo", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			if f := strings.Fields(line); len(f) == 2 && f[0] == "link_id:" {
				ids = append(ids, f[1])
			}
		}
	}
	return ids
}

// liveLinks is the set of BPF link ids in the kernel now.
func liveLinks(t *testing.T) map[string]bool {
	t.Helper()
	out, err := exec.Command("bpftool", "link", "show", "-j").Output()
	if err != nil {
		t.Fatalf("bpftool link show: %v", err)
	}
	var links []struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(out, &links); err != nil {
		t.Fatalf("bpftool link show: %v", err)
	}
	live := map[string]bool{}
	for _, l := range links {
		live[strconv.Itoa(l.ID)] = true
	}
	return live
}

// lastLineJSON checks that a stream ends with a whole JSON line.
func lastLineJSON(t *testing.T, what, s string) {
	t.Helper()
	if s == "" {
		t.Errorf("%s is empty", what)
		return
	}
	if !strings.HasSuffix(s, "\n") {
		t.Errorf("%s ends mid-line: %q", what, s[max(0, len(s)-200):])
		return
	}
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	if last := lines[len(lines)-1]; !json.Valid([]byte(last)) {
		t.Errorf("%s: last line is not JSON: %q", what, last)
	}
}

// TestSIGTERMDuringStorm: SIGTERM in the middle of a mount storm. The daemon
// detaches, flushes what its outputs take and exits 0 within 2s, even when
// nobody reads its stdout; what it wrote ends with a whole line, and none
// of its BPF links remain.
func TestSIGTERMDuringStorm(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "bpftool")
	for _, tt := range []struct {
		name        string
		stdoutStuck bool
		rate        int // bind/umount pairs a second
	}{
		{"stdout read", false, stormRate},
		{"stdout nobody reads", true, stormRate},
		// More than the reader correlates: the buffer is full at SIGTERM.
		{"storm beyond the reader", false, 50000},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			rec := filepath.Join(dir, "record.jsonl")
			var stdout io.Writer
			var collected privtest.SyncBuffer
			if tt.stdoutStuck {
				r, w, err := os.Pipe()
				if err != nil {
					t.Fatal(err)
				}
				defer r.Close()
				defer w.Close()
				stdout = w
			} else {
				stdout = &collected
			}
			d := privtest.StartDaemon(t, stdout, "--journald", "off", "--record", rec, "--state-dir", filepath.Join(dir, "state"))
			ours := bpfLinks(t, d.Cmd.Process.Pid)
			if len(ours) == 0 {
				t.Fatal("the daemon holds no BPF link")
			}
			startStorm(t, tt.rate, 10*time.Second)
			time.Sleep(1500 * time.Millisecond)

			took, code := d.Signal(t, syscall.SIGTERM, 5*time.Second)
			t.Logf("exit %d %v after SIGTERM, mid-storm, %d links", code, took, len(ours))
			if code != 0 || took > privtest.ExitLimit() {
				t.Errorf("exit %d after %v, want 0 within %v\n%s", code, took, privtest.ExitLimit(), strings.Join(d.Logs.All(), "\n"))
			}
			live := liveLinks(t)
			for _, id := range ours {
				if live[id] {
					t.Errorf("BPF link %s of the daemon still attached after its exit", id)
				}
			}
			logs := d.Logs.All()
			if !strings.Contains(strings.Join(logs, "\n"), `"msg":"stopped"`) {
				t.Error("no stopped line")
			}
			if !tt.stdoutStuck {
				lastLineJSON(t, "stdout", collected.String())
			}
			b, err := os.ReadFile(rec)
			if err != nil {
				t.Fatal(err)
			}
			lastLineJSON(t, "record", string(b))
		})
	}
}

// TestSIGHUPReopens: logrotate renames the --output and --record files and
// sends SIGHUP; the renamed files end with whole lines, and new events land
// in new files at the original paths.
func TestSIGHUPReopens(t *testing.T) {
	privtest.Require(t)
	dir := t.TempDir()
	out, rec := filepath.Join(dir, "events.jsonl"), filepath.Join(dir, "record.jsonl")
	d := privtest.StartDaemon(t, nil, "--journald", "off", "--output", out, "--record", rec, "--state-dir", filepath.Join(dir, "state"))
	node := privtest.StartNode(t)
	mnt := privtest.Mkdir(t, filepath.Join(dir, "mnt"))
	mountOnce := func(source string) {
		node.Run(t, "mount", "-t", "tmpfs", source, mnt)
		node.Run(t, "umount", mnt)
	}
	waitFor := func(path, what string) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for time.Now().Before(deadline) {
			if b, _ := os.ReadFile(path); bytes.Contains(b, []byte(what)) {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Fatalf("%s: no %s within 10s", path, what)
	}
	mountOnce("mntleak-before-rotate")
	waitFor(out, "mntleak-before-rotate")
	waitFor(rec, "mntleak-before-rotate")

	for _, p := range []string{out, rec} {
		if err := os.Rename(p, p+".1"); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.Cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	d.Logs.Wait(t, "reopened", func(s string) bool { return strings.Contains(s, `"msg":"reopened output files"`) })
	mountOnce("mntleak-after-rotate")
	waitFor(out, "mntleak-after-rotate")
	waitFor(rec, "mntleak-after-rotate")
	if _, code := d.Signal(t, syscall.SIGTERM, privtest.ExitLimit()); code != 0 {
		t.Errorf("exit %d", code)
	}
	for _, p := range []string{out, rec} {
		old, err := os.ReadFile(p + ".1")
		if err != nil {
			t.Fatal(err)
		}
		lastLineJSON(t, p+".1", string(old))
		if bytes.Contains(old, []byte("mntleak-after-rotate")) {
			t.Errorf("%s.1 got lines after the reopen", p)
		}
		cur, _ := os.ReadFile(p)
		lastLineJSON(t, p, string(cur))
		if bytes.Contains(cur, []byte("mntleak-before-rotate")) {
			t.Errorf("%s has lines from before the rotation", p)
		}
		if st, _ := os.Stat(p); st.Mode().Perm() != 0o600 {
			t.Errorf("%s mode %v, want 0600", p, st.Mode().Perm())
		}
	}
}
