package journaldtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/sink/journald"
)

const binary = "/lib/systemd/systemd-journald"

// Journal is a running (or stopped, or paused) test journald.
type Journal struct {
	Namespace string
	Socket    string
	cmd       *exec.Cmd
	client    net.Conn // the stream client that keeps it from its idle exit
}

// A journald of a journal namespace exits by itself once it has had
// nothing to do for 30 s while no stream client is connected ("Server is
// idle, exiting."; systemd 252, IDLE_TIMEOUT_USEC): under systemd the
// namespace's socket unit would start it again at the next entry, here
// nothing would, and a daemon that logs nothing for 30 s (a test waiting
// for its pods on a loaded machine) then finds no journal: its next sends
// fail with ECONNREFUSED and the entries are lost. So the test's journal
// keeps one stream client connected, as a journal that stays up.

// Start starts a journald in a namespace of its own; it is killed and its
// files removed at cleanup.
func Start(t testing.TB) *Journal {
	t.Helper()
	privtest.Require(t)
	privtest.RequireCommands(t, binary, "journalctl")
	ns := fmt.Sprintf("mntleaktest%d", time.Now().UnixNano()%1e12)
	j := &Journal{Namespace: ns, Socket: "/run/systemd/journal." + ns + "/socket"}
	t.Cleanup(func() {
		j.Stop(t)
		os.RemoveAll(filepath.Dir(j.Socket))
		if id, err := os.ReadFile("/etc/machine-id"); err == nil {
			for _, dir := range []string{"/var/log/journal", "/run/log/journal"} {
				os.RemoveAll(filepath.Join(dir, strings.TrimSpace(string(id))+"."+ns))
			}
		}
	})
	j.Restart(t)
	return j
}

// Restart starts the journald again at the same socket.
func (j *Journal) Restart(t testing.TB) {
	t.Helper()
	if j.cmd != nil {
		t.Fatal("journald already running")
	}
	j.cmd = exec.Command(binary, j.Namespace)
	if err := j.cmd.Start(); err != nil {
		t.Fatalf("start %s %s: %v", binary, j.Namespace, err)
	}
	s := journald.NewSocket(j.Socket, 0)
	for i := 0; i < 250 && !s.Available(); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	if !s.Available() {
		t.Fatalf("journald %s: no socket at %s after 5s", j.Namespace, j.Socket)
	}
	j.client = j.streamClient(t)
}

// streamClient connects to the namespace's stdout stream socket, as a
// service's stdout would, and sends the stream's header (identifier,
// unit, priority, level prefix, forward to syslog, kmsg, console).
func (j *Journal) streamClient(t testing.TB) net.Conn {
	t.Helper()
	path := filepath.Join(filepath.Dir(j.Socket), "stdout")
	c, err := net.Dial("unix", path)
	if err != nil {
		t.Fatalf("journald %s: connect to %s: %v", j.Namespace, path, err)
	}
	if _, err := c.Write([]byte("journaldtest\n\n6\n0\n0\n0\n0\n")); err != nil {
		c.Close()
		t.Fatalf("journald %s: stream header to %s: %v", j.Namespace, path, err)
	}
	return c
}

// Stop kills the journald (by pid) and removes its socket, as after a
// crash with the runtime directory cleaned: senders get ENOENT.
func (j *Journal) Stop(t testing.TB) {
	t.Helper()
	if j.cmd == nil {
		return
	}
	_ = j.cmd.Process.Signal(syscall.SIGCONT) // in case it was paused
	_ = j.cmd.Process.Kill()
	_ = j.cmd.Wait()
	j.cmd = nil
	if j.client != nil {
		j.client.Close()
		j.client = nil
	}
	os.Remove(j.Socket)
}

// Pause stops the journald with SIGSTOP: its socket stays, but nothing
// reads it, so a sender's queue fills up and sends block.
func (j *Journal) Pause(t testing.TB) {
	t.Helper()
	if err := j.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
}

// Resume continues a paused journald.
func (j *Journal) Resume(t testing.TB) {
	t.Helper()
	if err := j.cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
}

// Entries returns the journal's entries matching the journalctl matches
// (FIELD=value), polling up to timeout for at least one.
func (j *Journal) Entries(t testing.TB, timeout time.Duration, matches ...string) []map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		args := append([]string{"--namespace=" + j.Namespace, "-o", "json", "--no-pager"}, matches...)
		b, err := exec.Command("journalctl", args...).Output()
		if err != nil {
			t.Fatalf("journalctl %v: %v", args, err)
		}
		var out []map[string]any
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				out = append(out, m)
			}
		}
		if len(out) > 0 || time.Now().After(deadline) {
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
}
