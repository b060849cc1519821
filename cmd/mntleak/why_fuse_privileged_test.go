package main

import (
	"bytes"
	"encoding/json"
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

// TestWhyDeadFuseMount: a FUSE server killed with SIGKILL under a running
// daemon; `mntleak why DIR`, asked on the dead mount (where a stat fails
// with ENOTCONN), reads the daemon's persistent lineage, which kept the
// mount and the server's exit, and names the dead server.
func TestWhyDeadFuseMount(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "nsenter", "go")
	bin := privtest.Binary(t)
	server := filepath.Join(t.TempDir(), "gcsfuse")
	if out, err := exec.Command("go", "build", "-o", server, "../../e2e/testkit/fuseserve/fuseserver").CombinedOutput(); err != nil {
		t.Fatalf("build the FUSE server: %v\n%s", err, out)
	}
	stateDir := t.TempDir()
	node := privtest.StartNode(t)
	privtest.StartDaemon(t, nil, "--state-dir", stateDir)
	dir := privtest.Mkdir(t, filepath.Join(t.TempDir(), "bucket"))
	inNode := func(args ...string) *exec.Cmd {
		return exec.Command("nsenter", append([]string{"-t", strconv.Itoa(node.PID), "-m", "--"}, args...)...)
	}
	fuse := inNode(server, dir)
	privtest.StartReady(t, fuse, 10*time.Second)
	t.Cleanup(func() { _ = inNode("umount", "-l", "-c", dir).Run() })
	pid := fuse.Process.Pid
	if err := fuse.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = fuse.Wait()
	// The daemon writes its lineage out every second: wait for the exit.
	privtest.WaitFor(t, 10*time.Second, "the FUSE server's exit in the persistent lineage", func() bool {
		return lineageHas(t, stateDir, `"kind":"exit"`, `"pid":`+strconv.Itoa(pid)+`,`)
	})
	cmd := inNode(bin, "why", "--json", "--state-dir", stateDir, dir)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	var f finding.Finding
	if code := cmd.ProcessState.ExitCode(); code != exitError {
		t.Fatalf("why %s: exit %d, want %d (something holds it): %s%s", dir, code, exitError, stdout.String(), stderr.String())
	}
	if err := json.Unmarshal(stdout.Bytes(), &f); err != nil {
		t.Fatalf("why %s: %v: %s", dir, err, stdout.String())
	}
	if f.Cause != finding.CauseDeadFuseDaemon || !strings.Contains(f.Summary, "gcsfuse["+strconv.Itoa(pid)+"]") {
		t.Fatalf("why %s: %s", dir, f.Line())
	}
	cited := false
	for _, e := range f.Evidence {
		cited = cited || (e.Event != nil && e.Event.Kind == "exit" && int(e.Event.PID) == pid)
	}
	if !cited {
		t.Errorf("the server's exit is not cited: %s", f.Line())
	}
}

// lineageHas reports whether a line of the persistent lineage in dir has
// every one of parts.
func lineageHas(t *testing.T, dir string, parts ...string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			continue // a segment being rotated
		}
	lines:
		for _, line := range strings.Split(string(b), "\n") {
			for _, p := range parts {
				if !strings.Contains(line, p) {
					continue lines
				}
			}
			return true
		}
	}
	return false
}
