package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
)

// TestTraceBinary runs `mntleak trace` as a user would: filtered by comm,
// recording to a file, stopped by SIGINT.
func TestTraceBinary(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "mount", "umount")
	bin := privtest.Binary(t)
	dir := t.TempDir()
	mnt := privtest.Mkdir(t, filepath.Join(dir, "mnt"))
	rec := filepath.Join(dir, "events.jsonl")

	// A copy of mount(8) under a distinctive name gives a distinctive comm.
	prog := privtest.CopyBinary(t, "mount", filepath.Join(dir, "mntleak-e2e"))

	cmd := exec.Command(bin, "trace", "--format", "json", "--comm", "mntleak-e2e", "--record", rec, "--log-format", "json",
		"--journald", "off", "--metrics-addr", "127.0.0.1:0", "--state-dir", filepath.Join(dir, "state"))
	stdout, _ := cmd.StdoutPipe()
	stderr, _ := cmd.StderrPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := false
	t.Cleanup(func() {
		if !exited {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	var out, logs privtest.Lines
	go out.Collect(stdout)
	go logs.Collect(stderr)
	logs.Wait(t, "tracing log", func(s string) bool { return strings.Contains(s, `"msg":"tracing"`) })

	if b, err := exec.Command(prog, "-t", "tmpfs", "mntleak-e2e-fs", mnt).CombinedOutput(); err != nil {
		t.Fatalf("mount: %v\n%s", err, b)
	}
	if err := unix.Unmount(mnt, 0); err != nil {
		t.Fatal(err)
	}
	if b, _ := exec.Command("umount", mnt).CombinedOutput(); len(b) == 0 {
		t.Fatal("second umount succeeded")
	}
	out.Wait(t, "mount event", func(s string) bool { return strings.Contains(s, `"target":"`+mnt+`"`) })

	// Metrics, scraped over loopback from the address the daemon logged.
	var addr string
	logs.Wait(t, "metrics address", func(s string) bool {
		var l struct {
			Msg  string `json:"msg"`
			Addr string `json:"addr"`
		}
		if json.Unmarshal([]byte(s), &l) == nil && l.Msg == "serving metrics" {
			addr = l.Addr
			return true
		}
		return false
	})
	resp, err := http.Get("http://" + addr + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{`mntleak_events_total{kind="mount"}`, `mntleak_events_total{kind="umount"}`, "mntleak_namespaces_tracked"} {
		if !strings.Contains(string(body), want) {
			t.Errorf("metrics lack %s", want)
		}
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") {
		t.Errorf("metrics on %s, want loopback", addr)
	}

	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Fatalf("mntleak trace exited with %v after SIGINT\n%s", err, strings.Join(logs.All(), "\n"))
		}
	case <-time.After(privtest.ExitLimit()):
		t.Fatalf("mntleak trace still running %v after SIGINT", privtest.ExitLimit())
	}

	got := out.All()
	var kinds []string
	for _, line := range got {
		var ev event.Event
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("stdout line %q: %v", line, err)
		}
		if ev.Comm != "mntleak-e2e" {
			t.Errorf("filter let through comm %q", ev.Comm)
		}
		kinds = append(kinds, ev.Kind.String())
		if ev.Kind == event.KindMount && (ev.Source != "mntleak-e2e-fs" || ev.FSType != "tmpfs" || ev.Ret != 0) {
			t.Errorf("mount event %+v", ev)
		}
	}
	// The mount, and the exit of the process that made it; the umounts by
	// others are filtered out.
	if strings.Join(kinds, ",") != "mount,exit" {
		t.Errorf("kinds %v, want [mount exit]", kinds)
	}
	// The record is the whole stream the correlator consumed: every event
	// (the filter only selects what is printed) and the /proc snapshots.
	recorded, err := os.ReadFile(rec)
	if err != nil {
		t.Fatal(err)
	}
	recLines := strings.Split(strings.TrimSpace(string(recorded)), "\n")
	i, procLines := 0, 0
	for _, line := range recLines {
		if strings.HasPrefix(line, `{"proc":`) {
			procLines++
		}
		if i < len(got) && line == got[i] {
			i++
		}
	}
	if i != len(got) {
		t.Errorf("record lacks printed line %d: %s", i, got[i])
	}
	if procLines == 0 || len(recLines) <= len(got) {
		t.Errorf("record has %d lines, %d of /proc snapshots: want the whole stream", len(recLines), procLines)
	}
	replay := exec.Command(bin, "replay", "--format", "json", rec)
	if out, err := replay.CombinedOutput(); err != nil {
		t.Errorf("mntleak replay of the record: %v\n%s", err, out)
	}
	if st, _ := os.Stat(rec); st.Mode().Perm() != 0o600 {
		t.Errorf("record file mode %v, want 0600", st.Mode().Perm())
	}
	if !strings.Contains(strings.Join(logs.All(), "\n"), `"msg":"stopped"`) {
		t.Error("no stopped log line with the counters")
	}
}

// TestTraceWithoutPrivileges: as an unprivileged user the command fails with
// one clear line naming the capabilities, and exit status 1.
func TestTraceWithoutPrivileges(t *testing.T) {
	privtest.Require(t)
	built := privtest.Binary(t)
	// t.TempDir's parent is 0700: put a copy where nobody can reach it.
	dir, err := os.MkdirTemp("", "mntleak-unprivileged-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := privtest.CopyBinary(t, built, filepath.Join(dir, "mntleak"))
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "trace")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err = cmd.Run()
	if code := cmd.ProcessState.ExitCode(); code != exitError {
		t.Fatalf("exit %d (%v), want %d; stderr %q", code, err, exitError, stderr.String())
	}
	msg := strings.TrimSpace(stderr.String())
	if strings.Count(msg, "\n") != 0 || !strings.HasPrefix(msg, "mntleak trace: missing capabilities") || !strings.Contains(msg, "CAP_BPF") {
		t.Errorf("stderr %q, want one line naming CAP_BPF", msg)
	}
}

// TestRestartKeepsLineage: a private recursive bind is made while one
// daemon runs; a second daemon, started later with the same --state-dir,
// reports the leak when the host unmounts and cites that bind (not
// "inferred").
func TestRestartKeepsLineage(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "mount")
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	host := privtest.Mkdir(t, filepath.Join(dir, "c", "host"))
	// In a node namespace of the test's own: namespaces that other tests
	// create meanwhile must not take copies of vol.
	node := privtest.StartNode(t)
	node.Run(t, "mount", "-t", "tmpfs", "mntleak-restart", vol)

	first := privtest.StartDaemon(t, nil, "--state-dir", stateDir)
	node.StartHolder(t, "unchanged", "mount --rbind / "+host+" && mount --make-rprivate "+host)
	mountOf := func(flag uint64) func(*event.Event) bool { // the holder's on host
		return func(ev *event.Event) bool {
			return ev.Kind == event.KindMount && ev.Ret == 0 && ev.Target == host && ev.Flags&flag != 0
		}
	}
	privtest.WaitLogged(t, stateDir, time.Minute, mountOf(unix.MS_BIND), mountOf(unix.MS_PRIVATE))
	first.Stop(t)

	second := privtest.StartDaemon(t, nil, "--state-dir", stateDir)
	second.Logs.Wait(t, "remembered lineage", func(s string) bool {
		return strings.Contains(s, `"msg":"persistent lineage"`) && !strings.Contains(s, `"remembered":0`)
	})
	node.Run(t, "umount", vol)
	privtest.AfterLeakSettle(t)
	leak := findingOn(t, second, vol)
	second.Stop(t)
	if leak.Cause != finding.CauseRprivateBind || leak.Inferred {
		t.Fatalf("cause %s inferred=%v: %s", leak.Cause, leak.Inferred, leak.Line())
	}
	cited := false
	for _, e := range leak.Evidence {
		cited = cited || (e.Event != nil && e.Event.Kind == "mount" && strings.Contains(e.Event.Summary, "MS_BIND|MS_REC"))
	}
	if !cited {
		t.Errorf("the bind made before the restart is not cited: %+v", leak.Evidence)
	}
}
