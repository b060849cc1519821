package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"

	"github.com/mntleak/mntleak/finding"
)

// TestInodeReuseAcrossRestart: the kernel gives a dead mount namespace's
// inode to the next one made (at once: proc inodes come from the lowest
// free number), so a namespace remembered by a --state-dir may have been
// replaced while mntleak was down. Built for real: a namespace made under
// a first daemon (its creation persisted, with its birth id), the daemon
// stops, the namespace dies, and a new one takes its inode, made by a
// process older than the history (a shell that was waiting, which then
// exec's unshare: the start-time heuristic alone cannot tell). Neither
// `mntleak why --state-dir` nor a restarted `mntleak trace` may cite the
// dead namespace's creator for the new one.
func TestInodeReuseAcrossRestart(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "losetup", "mkfs.ext4", "sh", "sleep")
	bin := privtest.Binary(t)
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	dev := privtest.LoopDevice(t, 8)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	node := privtest.StartNode(t)
	// Shells in the node, older than everything the first daemon records,
	// each waiting to exec unshare: one is used up each time another
	// namespace, made meanwhile elsewhere on the machine, takes the inode.
	var waiting []*waiter
	for range 40 {
		waiting = append(waiting, startWaiter(t, node.PID))
	}
	first := privtest.StartDaemon(t, nil, "--state-dir", stateDir)
	node.Run(t, "mount", dev, vol)
	old := node.StartHolder(t, "private", "true")
	privtest.WaitLogged(t, stateDir, time.Minute, privtest.Made(old.MntNS))
	first.Stop(t)
	_ = old.Cmd.Process.Kill()
	_ = old.Cmd.Wait()
	// A new namespace takes the old one's inode: the kernel hands out the
	// lowest free number, so short-lived namespaces fill the numbers freed
	// below it (kept until the end) until one gets it; that one goes, and
	// a waiting shell makes the namespace that takes it.
	reused := reuseInode(t, old.MntNS, waiting)
	creator := "[" + strconv.Itoa(old.PID) + "]"

	// why, from the state dir.
	cmd := exec.Command(bin, "why", "--json", "--state-dir", stateDir, dev)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	var f finding.Finding
	if err := json.Unmarshal(stdout.Bytes(), &f); err != nil {
		t.Fatalf("why %s: %v; stdout %q, stderr %q", dev, err, stdout.String(), stderr.String())
	}
	checkNotInherited(t, "why", &f, old.MntNS, reused.pid, creator)

	// A restarted daemon, then the node unmounts the device: the new
	// namespace keeps its copy.
	second := privtest.StartDaemon(t, nil, "--state-dir", stateDir)
	node.Run(t, "umount", vol)
	privtest.AfterLeakSettle(t)
	leak := findingOn(t, second, vol)
	second.Stop(t)
	checkNotInherited(t, "trace", leak, old.MntNS, reused.pid, creator)
}

// reuseInode makes a waiting shell's new namespace take inode ino.
func reuseInode(t *testing.T, ino uint32, waiting []*waiter) *waiter {
	t.Helper()
	for tries := 0; tries < 600 && len(waiting) > 0; tries++ {
		filler := exec.Command("unshare", "-m", "sleep", "600")
		if err := filler.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = filler.Process.Kill()
			_ = filler.Wait()
		})
		var ns uint32
		privtest.WaitFor(t, 5*time.Second, "a filler namespace", func() bool {
			b, err := os.ReadFile("/proc/" + strconv.Itoa(filler.Process.Pid) + "/comm")
			if err != nil || strings.TrimSpace(string(b)) != "sleep" {
				return false
			}
			ns = privtest.MountNS(t, strconv.Itoa(filler.Process.Pid))
			return true
		})
		if ns != ino {
			continue // a lower free number: keep it taken
		}
		_ = filler.Process.Kill()
		_ = filler.Wait()
		w := waiting[0]
		waiting = waiting[1:]
		if w.unshare(t) == ino {
			return w
		}
		// Something else took it meanwhile: the shell's namespace stays.
	}
	t.Fatalf("no namespace took mnt:[%d] back (other namespaces are made meanwhile)", ino)
	return nil
}

func checkNotInherited(t *testing.T, what string, f *finding.Finding, ns uint32, pid int, creator string) {
	t.Helper()
	var h *finding.Holder
	for i := range f.Holders {
		if f.Holders[i].MntNS == ns {
			h = &f.Holders[i]
		}
	}
	if h == nil || h.Actor == nil || h.Actor.PID != pid {
		t.Errorf("%s: want mnt:[%d] held by pid %d; got holder %+v:\n%s", what, ns, pid, h, f.Line())
	}
	if strings.Contains(f.Line(), creator) {
		t.Errorf("%s cites %s, the creator of the namespace that had mnt:[%d] before:\n%s", what, creator, ns, f.Line())
	}
	for _, e := range f.Evidence {
		if e.Event != nil && e.Event.Kind == "unshare" && e.Event.MntNS == ns {
			t.Errorf("%s cites the creation of the namespace that had mnt:[%d] before: %s", what, ns, e.What)
		}
	}
}

// waiter is a shell in the node's namespace that execs `unshare -m sleep`
// when told to: its pid and start time are older than the namespace.
type waiter struct {
	cmd   *exec.Cmd
	in    io.WriteCloser
	pid   int
	ready *bufio.Reader
}

func startWaiter(t *testing.T, node int) *waiter {
	t.Helper()
	cmd := exec.Command("nsenter", "-t", strconv.Itoa(node), "-m", "--", "sh", "-c",
		"echo ready; read go; echo go; exec unshare -m --propagation private sleep 600")
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w := &waiter{cmd: cmd, in: in, pid: cmd.Process.Pid, ready: bufio.NewReader(out)}
	t.Cleanup(w.stop)
	if line, err := w.ready.ReadString('\n'); err != nil || strings.TrimSpace(line) != "ready" {
		t.Fatalf("waiting shell: %q %v", line, err)
	}
	return w
}

// unshare lets the shell exec unshare and returns its new namespace.
func (w *waiter) unshare(t *testing.T) uint32 {
	t.Helper()
	if _, err := io.WriteString(w.in, "go\n"); err != nil {
		t.Fatal(err)
	}
	if line, err := w.ready.ReadString('\n'); err != nil || strings.TrimSpace(line) != "go" {
		t.Fatalf("waiting shell: %q %v", line, err)
	}
	var ns uint32
	privtest.WaitFor(t, 5*time.Second, "the shell's unshare", func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(w.pid) + "/comm")
		if err != nil || strings.TrimSpace(string(b)) != "sleep" {
			return false
		}
		ns = privtest.MountNS(t, strconv.Itoa(w.pid))
		return true
	})
	return ns
}

func (w *waiter) stop() {
	_ = w.cmd.Process.Kill()
	_ = w.cmd.Wait()
}
