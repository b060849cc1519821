package procfs

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestMntNSIDAndNSFDs: a namespace's birth id tells two namespaces apart
// where the inode may not (the kernel reuses it), and a process holding a
// namespace's nsfs file open (not its own namespace) is listed with the fd.
func TestMntNSIDAndNSFDs(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "sh", "sleep")
	h := Host{}
	selfNS, selfID, err := h.MntNSID(os.Getpid())
	if err != nil || selfNS != privtest.MountNS(t, "self") || selfID == 0 {
		t.Fatalf("MntNSID(self) = %d, %d, %v", selfNS, selfID, err)
	}
	// A namespace, and a process of this namespace holding it open.
	inner := start(t, exec.Command("unshare", "-m", "sh", "-c", "echo ready; exec sleep 600"))
	innerNS := privtest.MountNS(t, strconv.Itoa(inner))
	ns, id, err := h.MntNSID(inner)
	if err != nil || ns != innerNS || id == 0 || id == selfID {
		t.Fatalf("MntNSID(%d) = %d, %d, %v; want mnt:[%d] with an id other than %d", inner, ns, id, err, innerNS, selfID)
	}
	holder := start(t, exec.Command("sh", "-c", "exec 7</proc/"+strconv.Itoa(inner)+"/ns/mnt; echo ready; exec sleep 600"))
	fds, err := h.NSFDs()
	var unreadable *UnreadableError
	if err != nil && !errors.As(err, &unreadable) { // pid 1 may be unreadable even to root
		t.Fatal(err)
	}
	found := false
	for _, f := range fds {
		if f.PID == inner {
			t.Errorf("a process's own namespace listed: %+v", f)
		}
		found = found || (f.PID == holder && f.FD == 7 && f.NS == innerNS && f.MntNS == selfNS)
	}
	if !found {
		t.Errorf("pid %d's fd 7 on mnt:[%d] not listed: %+v", holder, innerNS, fds)
	}
}

// start runs cmd until its "ready" line; it is killed at cleanup.
func start(t *testing.T, cmd *exec.Cmd) int {
	t.Helper()
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if line, err := bufio.NewReader(out).ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("%v: %q %v", cmd.Args, line, err)
	}
	return cmd.Process.Pid
}
