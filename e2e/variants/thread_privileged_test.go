package variants

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

// TestThreadUnshareKeepsItsProcess: a private namespace on the node has two
// processes, its creator and a Go program; the node unmounts a volume the
// namespace copied; while the teardown settles, one locked OS thread of
// the Go program unshares a mount namespace of its own and ends (as a Go
// program mounting in a namespace of its own from a thread does). The
// process stays in the holder namespace, as the kernel says
// (/proc/PID/ns/mnt): the one leak finding names the namespace's creator
// and the Go program among its processes, never the thread's namespace,
// that went with the thread.
func TestThreadUnshareKeepsItsProcess(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "mkfs.ext4", "losetup", "sh", "sleep")
	dir := t.TempDir()
	dev := privtest.LoopDevice(t, 8)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	node := privtest.StartNode(t)
	node.Run(t, "mount", dev, vol)
	l := startTracing(t)
	h := node.StartHolder(t, "private", "true")
	files := privtest.Mkdir(t, filepath.Join(dir, "thread"))
	prog := exec.Command("nsenter", "-t", strconv.Itoa(h.PID), "-m", "--", os.Args[0])
	prog.Env = append(os.Environ(), threadEnv+"="+files)
	run(t, prog)
	if ns := privtest.MountNS(t, strconv.Itoa(prog.Process.Pid)); ns != h.MntNS {
		t.Fatalf("the Go program is in mnt:[%d], want the holder's mnt:[%d]", ns, h.MntNS)
	}
	time.Sleep(300 * time.Millisecond)
	node.Run(t, "umount", vol)
	if err := os.WriteFile(filepath.Join(files, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	privtest.WaitFor(t, 5*time.Second, "the thread's unshare", func() bool {
		_, err := os.Stat(filepath.Join(files, "tid"))
		return err == nil
	})
	privtest.AfterLeakSettle(t)
	l.settle(t, false)
	objs := objects{paths: []string{dev, vol}}.withHolder(t, h)
	exactFindings(t, l.all(), objs, []expected{{kind: finding.KindLeak, syscall: "umount2", cause: finding.CauseUnshare,
		holder: holder{pid: h.PID, ns: h.MntNS, id: objs.ids[0]}, role: finding.RoleMember, fix: h.PID}})
	for _, f := range l.about(dev, vol) {
		if !namesProcess(f, h.MntNS, prog.Process.Pid) {
			t.Errorf("does not name the Go program [%d] among the processes of mnt:[%d], where its main thread is:\n%s",
				prog.Process.Pid, h.MntNS, f.Line())
		}
	}
}

// namesProcess reports whether f names pid among the processes of its
// holder namespace ns.
func namesProcess(f *finding.Finding, ns uint32, pid int) bool {
	for _, h := range f.Holders {
		if h.MntNS != ns {
			continue
		}
		for _, p := range h.Processes {
			if p.PID == pid {
				return true
			}
		}
	}
	return false
}
