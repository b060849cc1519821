package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/finding"
)

// holdWatch samples, until stopped, what a daemon could pin: the mount
// namespace of each of its threads (setns is per thread) and what each of
// its descriptors, its cwd and its root point to.
type holdWatch struct {
	pid      int
	hostNS   string
	forbid   []string // paths (mount points, devices) it must not hold
	mu       sync.Mutex
	problems map[string]bool
	samples  int
	stop     chan struct{}
	done     chan struct{}
}

func watchHolds(pid int, hostNS string, forbid ...string) *holdWatch {
	w := &holdWatch{pid: pid, hostNS: hostNS, forbid: forbid, problems: map[string]bool{}, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for {
			w.sample()
			select {
			case <-w.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *holdWatch) sample() {
	dir := fmt.Sprintf("/proc/%d", w.pid)
	var bad []string
	tasks, _ := os.ReadDir(dir + "/task")
	for _, task := range tasks {
		if ns, err := os.Readlink(dir + "/task/" + task.Name() + "/ns/mnt"); err == nil && ns != w.hostNS {
			bad = append(bad, fmt.Sprintf("thread %s in %s, not the host's %s", task.Name(), ns, w.hostNS))
		}
	}
	links := []string{dir + "/cwd", dir + "/root"}
	fds, _ := os.ReadDir(dir + "/fd")
	for _, fd := range fds {
		links = append(links, dir+"/fd/"+fd.Name())
	}
	for _, l := range links {
		target, err := os.Readlink(l)
		if err != nil {
			continue
		}
		for _, f := range w.forbid {
			if target == f || strings.HasPrefix(target, f+"/") {
				bad = append(bad, fmt.Sprintf("%s -> %s", l, target))
			}
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.samples++
	for _, b := range bad {
		w.problems[b] = true
	}
}

func (w *holdWatch) finish(t *testing.T) {
	t.Helper()
	close(w.stop)
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	t.Logf("%d samples of the daemon's namespaces and descriptors", w.samples)
	for p := range w.problems {
		t.Errorf("the daemon holds: %s", p)
	}
}

// TestNeverHoldsAMount: mntleak must never be a holder itself. While it
// explains a leak (a private copy of a loop-device mount in a holder
// namespace) and a failure (mkfs.ext4 on the device: EBUSY), every thread
// of the daemon stays in the host's mount namespace and none of its
// descriptors, nor its cwd or root, is on the mount or the device. Once
// the holder exits, the device is free (an O_EXCL open succeeds, as
// losetup -d and mkfs need) while the daemon still runs.
func TestNeverHoldsAMount(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "mkfs.ext4", "losetup", "mount", "umount")
	dir := t.TempDir()
	dev := privtest.LoopDevice(t, 16)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	node := privtest.StartNode(t)
	node.Run(t, "mount", dev, vol)

	d := privtest.StartDaemon(t, nil, "--journald", "off", "--state-dir", filepath.Join(dir, "state"))
	hostNS, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	w := watchHolds(d.Cmd.Process.Pid, hostNS, vol, dev)

	holder := node.StartHolder(t, "private", "cd /")
	node.Run(t, "umount", vol)
	// The leak needs the unshare and the umount events, which a loaded
	// machine may lose: waited for, not required. The failure below is
	// explained from /proc and is.
	if !d.Logs.Within(10*time.Second, func(s string) bool {
		return strings.Contains(s, `"finding":"leak"`) && strings.Contains(s, `"path":"`+vol+`"`)
	}) {
		t.Logf("no leak finding on %s", vol)
	}
	mkfs := exec.Command("nsenter", "-t", fmt.Sprint(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", dev)
	if out, err := mkfs.CombinedOutput(); err == nil {
		t.Fatalf("mkfs.ext4 on a device still mounted in a holder succeeded: %s", out)
	}
	d.Logs.Wait(t, "failure finding", func(s string) bool {
		return strings.Contains(s, `"finding":"failure"`) && strings.Contains(s, `"path":"`+dev+`"`) &&
			strings.Contains(s, fmt.Sprintf(`"holder_pid":%d`, holder.PID))
	})
	if ns := privtest.MountNS(t, fmt.Sprint(d.Cmd.Process.Pid)); ns != privtest.MountNS(t, "self") || ns == holder.MntNS {
		t.Errorf("daemon in mnt:[%d], test in mnt:[%d], holder in mnt:[%d]", ns, privtest.MountNS(t, "self"), holder.MntNS)
	}

	// The holder goes: nothing else may keep the device busy.
	_ = holder.Cmd.Process.Kill()
	_ = holder.Cmd.Wait()
	free := false
	for i := 0; i < 100 && !free; i++ {
		if fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL, 0); err == nil {
			unix.Close(fd)
			free = true
		} else {
			time.Sleep(50 * time.Millisecond)
		}
	}
	if !free {
		t.Errorf("%s still busy after its holder exited, with the daemon running", dev)
	}
	if err := exec.Command("nsenter", "-t", fmt.Sprint(node.PID), "-m", "--", "mkfs.ext4", "-q", "-F", dev).Run(); err != nil {
		t.Errorf("mkfs.ext4 after the holder exited: %v", err)
	}
	w.finish(t)
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/mountinfo", d.Cmd.Process.Pid)); err == nil && strings.Contains(string(b), " "+vol+" ") {
		t.Errorf("the daemon's namespace has %s mounted", vol)
	}
	if _, code := d.Signal(t, syscall.SIGTERM, privtest.ExitLimit()); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestUmountFromItsOwnCwd: `cd DIR && umount DIR` fails with EBUSY
// because of the cwd the shell passed on; umount has exited before /proc
// can show it, and the finding says so instead of guessing at a kernel
// user such as a loop device.
func TestUmountFromItsOwnCwd(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "sh", "umount")
	dir := privtest.Mkdir(t, filepath.Join(t.TempDir(), "vol"))
	privtest.Mount(t, "tmpfs", dir, "tmpfs", 0, "size=1m")
	d := privtest.StartDaemon(t, nil, "--state-dir", "")
	out, err := exec.Command("sh", "-c", "cd "+dir+" && exec umount "+dir).CombinedOutput()
	if err == nil {
		t.Fatalf("umount from inside succeeded: %s", out)
	}
	line := d.Logs.Wait(t, "finding on "+dir, func(s string) bool {
		return strings.Contains(s, `"finding":"failure"`) && strings.Contains(s, "EBUSY umount2 "+dir)
	})
	for _, want := range []string{"'s own cwd is inside " + dir, "Fix: cd out of " + dir, `"cause":"in-use"`} {
		if !strings.Contains(line, want) {
			t.Errorf("finding lacks %q: %s", want, line)
		}
	}
	if strings.Contains(line, "kernel user") {
		t.Errorf("finding guesses a kernel user: %s", line)
	}
	d.Stop(t)
}

// TestForgedLogLines: a mount point named with a newline, a JSON log
// record and an ESC sequence, held by a binary named "hold\nFAKE": the
// daemon's console log carries the leak as one line with those escaped, no
// forged record and no raw escape byte, while the JSON detail keeps the
// raw path.
func TestForgedLogLines(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "sleep")
	evil := "ev il\n{\"level\":\"error\",\"msg\":\"FAKE\"}\x1b[31m"
	base := t.TempDir()
	dir := privtest.Mkdir(t, filepath.Join(base, evil))
	prog := privtest.CopyBinary(t, "sleep", filepath.Join(base, "hold\nFAKE"))
	privtest.Mount(t, "tmpfs", dir, "tmpfs", 0, "size=1m")

	var stderr privtest.SyncBuffer
	d := privtest.StartDaemon(t, nil, "--state-dir", "", "--log-format", "json")
	holder := exec.Command("unshare", "-m", "--propagation", "private", prog, "600")
	holder.Stderr = &stderr
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	privtest.WaitFor(t, 5*time.Second, "the holder's own namespace", func() bool {
		return privtest.MountNS(t, strconv.Itoa(holder.Process.Pid)) != privtest.MountNS(t, "self")
	})
	time.Sleep(200 * time.Millisecond) // exec'd: its comm is the binary's name
	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
	privtest.AfterLeakSettle(t) // the leak is reported once the teardown has settled
	jsonLine := d.Logs.Wait(t, "leak finding", func(s string) bool { return strings.Contains(s, `"finding":"leak"`) && strings.Contains(s, "FAKE") })
	var rec struct {
		Msg    string           `json:"msg"`
		Detail *finding.Finding `json:"detail"`
	}
	if err := json.Unmarshal([]byte(jsonLine), &rec); err != nil || rec.Detail == nil {
		t.Fatalf("finding is not JSON with a detail: %v: %s", err, jsonLine)
	}
	if rec.Detail.Object.Path != dir {
		t.Errorf("JSON detail path %q, want the raw %q", rec.Detail.Object.Path, dir)
	}
	for _, want := range []string{`ev il\n{"level":"error","msg":"FAKE"}\x1b[31m`, `hold\nFAKE[`} {
		if !strings.Contains(rec.Msg, want) {
			t.Errorf("message lacks the escaped %q: %s", want, rec.Msg)
		}
	}
	if strings.ContainsAny(rec.Msg, "\n\x1b") {
		t.Errorf("message has a raw newline or ESC: %q", rec.Msg)
	}
	d.Stop(t)

	// The console format, where the message is written as it is.
	c := privtest.StartDaemon(t, nil, "--state-dir", "", "--log-format", "console")
	_ = holder.Process.Kill()
	_ = holder.Wait()
	holder2 := exec.Command("unshare", "-m", "--propagation", "private", prog, "600")
	privtest.Mount(t, "tmpfs", dir, "tmpfs", 0, "size=1m")
	if err := holder2.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder2.Process.Kill(); _ = holder2.Wait() })
	privtest.WaitFor(t, 5*time.Second, "the second holder's namespace", func() bool {
		return privtest.MountNS(t, strconv.Itoa(holder2.Process.Pid)) != privtest.MountNS(t, "self")
	})
	time.Sleep(200 * time.Millisecond)
	if err := unix.Unmount(dir, 0); err != nil {
		t.Fatal(err)
	}
	privtest.AfterLeakSettle(t)
	c.Logs.Wait(t, "leak finding (console)", func(s string) bool { return strings.Contains(s, "LEAK ") && strings.Contains(s, "FAKE") })
	c.Stop(t)
	for _, l := range c.Logs.All() {
		if strings.Contains(l, "\x1b") {
			t.Errorf("raw ESC in the console log: %q", l)
		}
		if strings.HasPrefix(l, `{"level":"error","msg":"FAKE"`) || strings.HasPrefix(l, "FAKE") {
			t.Errorf("a forged line in the console log: %q", l)
		}
	}
}
