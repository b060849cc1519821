package privtest

import (
	"bufio"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// DetachableCopy is a holder's private copy of a tmpfs that a node of the
// test's own (a private mount namespace standing for the host) mounted at
// Vol; Detach has the node unmount Vol and remove the directory, which
// makes the kernel detach the holder's copy. Own is an empty directory the
// holder can mount on.
type DetachableCopy struct {
	Vol, Own string
	Holder   int // the holder's pid (sleep 600 in its own namespace)
	stdin    io.WriteCloser
	lines    *bufio.Reader
}

// NewDetachableCopy starts the node and the holder (the tmpfs's source is
// named source), and registers their end: the holder killed by its pid,
// the node's shell ended.
func NewDetachableCopy(t *testing.T, source string) *DetachableCopy {
	t.Helper()
	dir := t.TempDir()
	d := &DetachableCopy{Vol: filepath.Join(dir, "vol"), Own: filepath.Join(dir, "own")}
	if err := os.Mkdir(d.Own, 0o755); err != nil {
		t.Fatal(err)
	}
	node := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		"mkdir "+d.Vol+" && mount -t tmpfs "+source+" "+d.Vol+" && "+
			"{ unshare -m --propagation private sh -c 'echo $$; exec sleep 600' & } && read go && umount "+d.Vol+" && rmdir "+d.Vol+" && echo done && read end")
	stdin, err := node.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	d.stdin, d.lines = stdin, bufio.NewReader(stdout)
	t.Cleanup(func() {
		if d.Holder != 0 {
			_ = exec.Command("kill", strconv.Itoa(d.Holder)).Run()
		}
		stdin.Close()
		_ = node.Process.Kill()
		_ = node.Wait()
	})
	line, err := d.lines.ReadString('\n')
	if err != nil {
		t.Fatalf("node: %v", err)
	}
	if d.Holder, err = strconv.Atoi(strings.TrimSpace(line)); err != nil {
		t.Fatalf("holder's pid: %q: %v", line, err)
	}
	return d
}

// Detach has the node unmount Vol and remove it, and returns once it has.
func (d *DetachableCopy) Detach(t *testing.T) {
	t.Helper()
	if _, err := io.WriteString(d.stdin, "go\n"); err != nil {
		t.Fatal(err)
	}
	if line, _ := d.lines.ReadString('\n'); strings.TrimSpace(line) != "done" {
		t.Fatalf("node: %q, want done", line)
	}
}
