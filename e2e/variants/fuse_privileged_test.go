package variants

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/findingset"
	"github.com/mntleak/mntleak/e2e/testkit/fuseserve"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

// fuseServer is the FUSE server helper started in the node on dir.
type fuseServer struct {
	cmd *exec.Cmd
	pid int
	dir string
}

// startFUSEServer starts the test binary as the FUSE server helper
// (fuseEnv) in the node's namespace, serving dir; the mount is dropped
// lazily at cleanup (the server is killed by StartReady's cleanup).
func startFUSEServer(t *testing.T, node privtest.Node, dir string) *fuseServer {
	t.Helper()
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Fatalf("no FUSE here: %v", err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", self)
	cmd.Env = append(os.Environ(), fuseEnv+"="+dir)
	privtest.StartReady(t, cmd, 10*time.Second)
	t.Cleanup(func() {
		_ = exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", "-l", "-c", dir).Run()
	})
	return &fuseServer{cmd: cmd, pid: cmd.Process.Pid, dir: dir}
}

// inNode is path as the node's processes see it, from this test's
// namespace: through the node's root.
func inNode(node privtest.Node, path string) string {
	return "/proc/" + strconv.Itoa(node.PID) + "/root" + path
}

// kill ends the server with SIGKILL, as the OOM killer or a node plugin's
// restart does, and checks with the kernel that it died of it and that its
// mount is dead (statfs: ENOTCONN, the connection aborted) and still there.
func (s *fuseServer) kill(t *testing.T, node privtest.Node) {
	t.Helper()
	if err := s.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := s.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("the FUSE server did not die of SIGKILL: %v", err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(inNode(node, s.dir), &st); !errors.Is(err, unix.ENOTCONN) {
		t.Fatalf("statfs of the dead FUSE mount %s: %v, want ENOTCONN", s.dir, err)
	}
	if out := node.Run(t, "findmnt", "-rn", "-o", "FSTYPE", s.dir); out != fuseserve.FSType+"\n" {
		t.Fatalf("%s after its server died: %q, want the FUSE mount still there", s.dir, out)
	}
}

// citesExit reports whether the finding cites the exit event of pid.
func citesExit(f *finding.Finding, pid int) bool {
	for _, e := range f.Evidence {
		if e.Event != nil && e.Event.Kind == "exit" && int(e.Event.PID) == pid {
			return true
		}
	}
	return false
}

// TestFuseServerKilled: a FUSE server killed with SIGKILL leaves its
// mount; the teardown that then fails on it, or the copy a private
// namespace keeps of it, is named dead-fuse-daemon: exactly one finding,
// citing the server's mount and its exit, with the lazy unmount where the
// mount is (and the process in it to stop, the namespace to enter).
func TestFuseServerKilled(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "nsenter", "umount", "rmdir", "findmnt", "sh", "sleep")
	cells := []struct {
		name     string
		teardown func(t *testing.T, node privtest.Node, s *fuseServer) (findingset.Want, []uint32)
	}{
		{"rmdir of its mountpoint", func(t *testing.T, node privtest.Node, s *fuseServer) (findingset.Want, []uint32) {
			s.kill(t, node)
			if err := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "rmdir", s.dir).Run(); err == nil {
				t.Fatalf("rmdir %s succeeded under its mount", s.dir)
			}
			return findingset.Want{Kind: finding.KindFailure, Syscall: "rmdir", Cause: finding.CauseDeadFuseDaemon, NS: node.MntNS, Event: "mount"}, nil
		}},
		{"umount a process in it keeps busy", func(t *testing.T, node privtest.Node, s *fuseServer) (findingset.Want, []uint32) {
			in := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "sh", "-c", "cd "+s.dir+" && echo ready && exec sleep 600")
			privtest.StartReady(t, in, 10*time.Second)
			s.kill(t, node)
			if out, err := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", "-c", s.dir).CombinedOutput(); err == nil {
				t.Fatalf("umount %s succeeded with a process in it: %s", s.dir, out)
			}
			pid := in.Process.Pid
			return findingset.Want{Kind: finding.KindFailure, Syscall: "umount2", Cause: finding.CauseDeadFuseDaemon, NS: node.MntNS, Event: "mount",
				PID: pid, Role: finding.RolePinner, Fix: pid}, nil
		}},
		{"a copy a private namespace keeps", func(t *testing.T, node privtest.Node, s *fuseServer) (findingset.Want, []uint32) {
			h := node.StartHolder(t, "private", "true")
			s.kill(t, node)
			node.Run(t, "umount", "-c", s.dir)
			return findingset.Want{Kind: finding.KindLeak, Syscall: "umount2", Cause: finding.CauseDeadFuseDaemon, NS: h.MntNS,
				PID: h.PID, Role: finding.RoleMember, Fix: h.PID}, []uint32{h.MntNS}
		}},
	}
	for _, cell := range cells {
		t.Run(cell.name, func(t *testing.T) {
			node := privtest.StartNode(t)
			l := startTracing(t)
			time.Sleep(100 * time.Millisecond)
			dir := privtest.Mkdir(t, filepath.Join(t.TempDir(), "fuse"))
			s := startFUSEServer(t, node, dir)
			want, nss := cell.teardown(t, node, s)
			l.settle(t, true)
			got := findingset.Objects{Paths: []string{dir}, NS: nss}.Of(l.all())
			findingset.Exact(t, got, []findingset.Want{want})
			for _, f := range got {
				l.oracle.Check(t, f)
				if !citesExit(f, s.pid) || !findingset.Cites(f, node.MntNS, "mount") {
					t.Errorf("the server's mount and its exit (pid %d) are not both cited: %+v\n%s", s.pid, f.Evidence, f.Line())
				}
			}
		})
	}
}

// TestFuseServerUnmountedCleanly is the control: a FUSE server that is
// alive when its mount is unmounted (it then exits 0) and the mountpoint
// removed: no finding names the mount, after the settle window.
func TestFuseServerUnmountedCleanly(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "nsenter", "umount", "rmdir", "findmnt")
	node := privtest.StartNode(t)
	l := startTracing(t)
	time.Sleep(100 * time.Millisecond)
	dir := privtest.Mkdir(t, filepath.Join(t.TempDir(), "fuse"))
	s := startFUSEServer(t, node, dir)
	if out := node.Run(t, "findmnt", "-rn", "-o", "FSTYPE", dir); out != fuseserve.FSType+"\n" {
		t.Fatalf("%s: %q, want the FUSE mount", dir, out)
	}
	node.Run(t, "umount", dir)
	if err := s.cmd.Wait(); err != nil {
		t.Fatalf("the FUSE server did not exit cleanly after its unmount: %v", err)
	}
	node.Run(t, "rmdir", dir)
	control(t, l, objects{paths: []string{dir}})
}
