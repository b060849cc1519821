package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/state"
)

// TestDamagedStateDir: the daemon restarted on a damaged --state-dir. Damaged
// files are skipped with one warning each naming them, and the daemon keeps
// tracing and persisting; a directory that cannot be used at all is one
// error naming it, and the daemon traces on without persistence (see the
// flag's help). Every case exits 0 on SIGTERM.
func TestDamagedStateDir(t *testing.T) {
	privtest.Require(t)
	boot, err := state.BootID()
	if err != nil {
		t.Fatal(err)
	}
	header := func(bootID string) string { return `{"mntleak_lineage":1,"boot_id":"` + bootID + `"}` + "\n" }
	good := `{"kind":"mount","time":"2026-01-01T00:00:00Z","mono_ns":1,"pid":7,"tid":7,"ppid":1,"uid":0,"comm":"runc","mntns":4026531840,"cgroup_id":0,"syscall_nr":165,"syscall":"mount","ret":0,"source":"/","target":"/run/c1/rootfs"}` + "\n"
	write := func(t *testing.T, path, content string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tt := range []struct {
		name    string
		prepare func(t *testing.T, dir string) (stateDir string, named []string)
		msg     string // the one line expected, naming each of named
		persist bool   // the daemon still persists its events
	}{
		{"truncated and garbled segments", func(t *testing.T, dir string) (string, []string) {
			sd := privtest.Mkdir(t, filepath.Join(dir, "state"))
			write(t, filepath.Join(sd, "lineage-1.jsonl"), header(boot)+good+`{"kind":"mount","pid":8,"tar`)
			write(t, filepath.Join(sd, "lineage-2.jsonl"), "\x00\x17garbage\xff\n"+good)
			return sd, []string{filepath.Join(sd, "lineage-1.jsonl"), filepath.Join(sd, "lineage-2.jsonl")}
		}, "persistent lineage: skipped damaged data", true},
		{"unreadable segments: a directory and a FIFO", func(t *testing.T, dir string) (string, []string) {
			sd := privtest.Mkdir(t, filepath.Join(dir, "state"))
			privtest.Mkdir(t, filepath.Join(sd, "lineage-3.jsonl", "sub"))
			if err := unix.Mkfifo(filepath.Join(sd, "lineage-4.jsonl"), 0o600); err != nil {
				t.Fatal(err)
			}
			return sd, []string{filepath.Join(sd, "lineage-3.jsonl"), filepath.Join(sd, "lineage-4.jsonl")}
		}, "persistent lineage: skipped damaged data", true},
		{"segments of another boot", func(t *testing.T, dir string) (string, []string) {
			sd := privtest.Mkdir(t, filepath.Join(dir, "state"))
			write(t, filepath.Join(sd, "lineage-1.jsonl"), header("00000000-0000-0000-0000-000000000000")+good)
			return sd, []string{sd}
		}, "persistent lineage: segments of an earlier boot ignored", true},
		{"a file where the directory should be", func(t *testing.T, dir string) (string, []string) {
			sd := filepath.Join(dir, "state")
			write(t, sd, "not a directory\n")
			return sd, []string{sd}
		}, "persistent lineage disabled", false},
		{"a symlink loop where the directory should be", func(t *testing.T, dir string) (string, []string) {
			sd := filepath.Join(dir, "state")
			if err := os.Symlink(sd, sd); err != nil {
				t.Fatal(err)
			}
			return sd, []string{sd}
		}, "persistent lineage disabled", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			stateDir, named := tt.prepare(t, dir)
			out := filepath.Join(dir, "events.jsonl")
			d := privtest.StartDaemon(t, nil, "--journald", "off", "--output", out, "--state-dir", stateDir)

			// It keeps working: a mount is streamed (and persisted).
			node := privtest.StartNode(t)
			mnt := privtest.Mkdir(t, filepath.Join(dir, "mnt"))
			source := "mntleak-statedir-" + strings.ReplaceAll(tt.name, " ", "-")
			node.Run(t, "mount", "-t", "tmpfs", source, mnt)
			node.Run(t, "umount", mnt)
			deadline := time.Now().Add(10 * time.Second)
			for {
				if b, _ := os.ReadFile(out); bytes.Contains(b, []byte(source)) {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("the mount was not streamed\n%s", strings.Join(d.Logs.All(), "\n"))
				}
				time.Sleep(50 * time.Millisecond)
			}
			if _, code := d.Signal(t, syscall.SIGTERM, privtest.ExitLimit()); code != 0 {
				t.Errorf("exit %d\n%s", code, strings.Join(d.Logs.All(), "\n"))
			}

			var lines []string
			for _, s := range d.Logs.All() {
				if strings.Contains(s, `"msg":"`+tt.msg) {
					lines = append(lines, s)
				}
			}
			if len(lines) != len(named) {
				t.Errorf("%d %q lines, want %d:\n%s", len(lines), tt.msg, len(named), strings.Join(d.Logs.All(), "\n"))
			}
			for _, p := range named {
				n := 0
				for _, s := range lines {
					if strings.Contains(s, `"path":"`+p+`"`) {
						n++
					}
				}
				if n != 1 {
					t.Errorf("%s named by %d lines, want 1", p, n)
				}
			}
			if !tt.persist {
				return
			}
			loaded, err := state.Read(stateDir, boot)
			if err != nil {
				t.Fatal(err)
			}
			persisted := false
			for _, ev := range loaded.Events {
				persisted = persisted || ev.Source == source
			}
			if !persisted {
				t.Errorf("the mount made after the restart was not persisted")
			}
		})
	}
}

// TestOneDaemonPerStateDir: a second daemon on the same --state-dir exits
// 1 at once with one line naming the first one's pid, and loads nothing;
// once the first has stopped, the dir is free again. With --state-dir ""
// there is nothing to lock.
func TestOneDaemonPerStateDir(t *testing.T) {
	privtest.Require(t)
	dir := filepath.Join(t.TempDir(), "state")
	first := privtest.StartDaemon(t, nil, "--state-dir", dir)

	second := exec.Command(privtest.Binary(t), "trace", "--format", "json", "--log-format", "json", "--journald", "off", "--state-dir", dir)
	var stderr bytes.Buffer
	second.Stderr = &stderr
	done := make(chan error, 1)
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- second.Wait() }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		_ = second.Process.Kill()
		t.Fatalf("the second daemon is still running:\n%s", stderr.String())
	}
	want := fmt.Sprintf("mntleak trace: state dir %s is in use by another mntleak (pid %d)", dir, first.Cmd.Process.Pid)
	lines := strings.Split(strings.TrimSpace(stderr.String()), "\n")
	if code := second.ProcessState.ExitCode(); code != exitError || !strings.HasPrefix(lines[len(lines)-1], want) {
		t.Errorf("second daemon: exit %d, stderr:\n%s\nwant exit %d and a last line starting %q", code, stderr.String(), exitError, want)
	}
	if strings.Contains(stderr.String(), "BPF programs attached") {
		t.Errorf("the second daemon loaded its programs before giving up:\n%s", stderr.String())
	}
	first.Stop(t)

	again := privtest.StartDaemon(t, nil, "--state-dir", dir)
	again.Stop(t)
	a := privtest.StartDaemon(t, nil, "--state-dir", "")
	b := privtest.StartDaemon(t, nil, "--state-dir", "")
	b.Stop(t)
	a.Stop(t)
}
