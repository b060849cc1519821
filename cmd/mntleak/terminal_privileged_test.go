package main

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

// TestTraceOnATerminal runs `mntleak trace` as `make run` does, its stdout
// a terminal and no flags about the output: the terminal shows the start
// line, then the findings in their short form (a headline of at most 160
// characters naming the holder and the cause, its detail lines
// indented), no event; stderr shows no finding. The finding is a real
// one: a tmpfs whose unmount fails (EBUSY) because a process's cwd is in
// it, in a node namespace of the test's own.
func TestTraceOnATerminal(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "mount", "umount", "nsenter", "sh", "sleep")
	bin := privtest.Binary(t)
	dir := t.TempDir()
	mnt := privtest.Mkdir(t, filepath.Join(dir, "tty-vol"))
	node := privtest.StartNode(t)
	node.Run(t, "mount", "-t", "tmpfs", "mntleak-tty", mnt)
	user := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "sh", "-c", "cd "+mnt+" && echo ready && exec sleep 600")
	privtest.StartReady(t, user, 10*time.Second)

	tty, screen := openTerminal(t)
	var stderr bytes.Buffer
	cmd := exec.Command(bin, "trace", "--journald", "off", "--state-dir", filepath.Join(dir, "state"), "--cri-socket=", "--docker-socket=")
	cmd.Stdout, cmd.Stderr = tty, &stderr
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
	screen.wait(t, "Ctrl-C stops.\n", 30*time.Second)
	if out, err := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", mnt).CombinedOutput(); err == nil {
		t.Fatalf("umount of a busy tmpfs succeeded: %s", out)
	}
	screen.wait(t, "held by sleep["+strconv.Itoa(user.Process.Pid)+"]", 30*time.Second)
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		exited = true
		if err != nil {
			t.Fatalf("mntleak trace exited with %v after SIGINT\n%s", err, stderr.String())
		}
	case <-time.After(privtest.ExitLimit()):
		t.Fatalf("mntleak trace still running %v after SIGINT", privtest.ExitLimit())
	}
	text := screen.close()
	t.Logf("the terminal:\n%s", text)
	if strings.Contains(stderr.String(), "EBUSY") || strings.Contains(stderr.String(), "[cause:") {
		t.Errorf("stderr shows a finding too:\n%s", stderr.String())
	}
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	if !strings.HasPrefix(lines[0], "mntleak: watching mounts on ") {
		t.Errorf("first line %q, want the start line", lines[0])
	}
	ours := ""
	for _, l := range lines[1:] {
		switch {
		case l == "" || strings.HasPrefix(l, "    "): // between findings, a detail line
		case utf8.RuneCountInString(l) > finding.HeadlineLimit || !strings.Contains(l, " [cause: ") || !strings.HasSuffix(l, "]"):
			// Other tests' findings may show (the correlator sees the
			// whole machine); an event line or a long line may not.
			t.Errorf("not a headline of at most %d characters: %q", finding.HeadlineLimit, l)
		case strings.Contains(l, "tty-vol"):
			ours = l
		}
	}
	want := "held by sleep[" + strconv.Itoa(user.Process.Pid) + "] in mnt:[" + strconv.FormatUint(uint64(node.MntNS), 10) + "] [cause: in-use]"
	if !strings.HasPrefix(ours, "EBUSY umount2 ") || !strings.HasSuffix(ours, want) {
		t.Errorf("the finding's headline %q, want EBUSY umount2 ... %s", ours, want)
	}
	block := text[strings.Index(text, ours):]
	block = block[:strings.Index(block, "\n\n")+1]
	for _, label := range []string{"\n    call: EBUSY umount2 " + mnt, "\n    holder: ", "\n    cause: in-use: ", "\n    fix: "} {
		if !strings.Contains(block, label) {
			t.Errorf("the finding's block lacks %q:\n%s", label, block)
		}
	}
}
