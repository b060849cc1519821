package kmount

import (
	"bufio"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestWhichCallsTheKernelNotes records which mount calls a mark on a
// namespace reports on this kernel, and so which changes the daemon's
// mount notes keep a table true through (correlate: notedKind) and which
// must still make it stale. A node (a private namespace standing for the
// host) has a shared tmpfs; a holder's namespace is copied from it, its
// copy a peer. Each step runs one call, in the node or the holder, and
// the events read after it must be exactly the ones listed: a mount made
// or unmounted (here or by propagation) is told, a remount, a propagation
// change or mount_setattr is not, a move is told as one event with both
// bits (Moved), and a mount propagated beneath one the holder has there is
// told as its attach alone, although the kernel made it the parent of the
// holder's mount.
func TestWhichCallsTheKernelNotes(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "sh", "sleep", "mount", "umount", "python3")
	w, err := NewWatch()
	if err != nil {
		t.Skipf("no fanotify mount-namespace marks here: %v", err)
	}
	defer w.Close()
	base := filepath.Join(t.TempDir(), "base")
	setattr, err := filepath.Abs("testdata/setattr.py")
	if err != nil {
		t.Fatal(err)
	}
	node := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		"mkdir "+base+" && mount -t tmpfs kmcalls "+base+" && mount --make-shared "+base+" && cd "+base+" && mkdir a m1 m2 && "+
			"{ unshare -m --propagation unchanged sh -c 'echo $$; exec sleep 600' & } && exec sleep 600")
	out, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	holder := strings.TrimSpace(line)
	t.Cleanup(func() {
		if _, err := strconv.Atoi(holder); err == nil {
			_ = exec.Command("kill", holder).Run()
		}
		_ = node.Process.Kill()
		_ = node.Wait()
	})
	if _, err := strconv.Atoi(holder); err != nil {
		t.Fatalf("holder's pid: %q", line)
	}
	if err := w.Add("/proc/" + holder + "/ns/mnt"); err != nil {
		t.Fatal(err)
	}
	nodePID := strconv.Itoa(node.Process.Pid)
	const attach, detach, moved = "attach", "detach", "moved"
	steps := []struct {
		in   string
		call []string
		want []string
	}{
		{nodePID, []string{"mount", "-t", "tmpfs", "kmprop", base + "/a"}, []string{attach}},
		{nodePID, []string{"umount", base + "/a"}, []string{detach}},
		{holder, []string{"mount", "-t", "tmpfs", "kmown", base + "/m1"}, []string{attach}},
		{holder, []string{"mount", "-o", "remount,ro", base + "/m1"}, nil},
		{holder, []string{"mount", "-o", "bind,remount,rw", base + "/m1"}, nil},
		{holder, []string{"mount", "--make-private", base + "/m1"}, nil},
		{holder, []string{"mount", "--make-shared", base + "/m1"}, nil},
		{holder, []string{"mount", "--make-slave", base + "/m1"}, nil},
		{holder, []string{"mount", "--make-unbindable", base + "/m1"}, nil},
		{holder, []string{"python3", setattr, base + "/m1", "0x2", "0x40000"}, nil}, // nosuid, MS_PRIVATE
		{holder, []string{"mount", "--make-slave", base}, nil},
		{holder, []string{"mount", "-t", "tmpfs", "kmtop", base + "/a"}, []string{attach}},
		{nodePID, []string{"mount", "-t", "tmpfs", "kmbeneath", base + "/a"}, []string{attach}}, // tucked beneath kmtop
		{holder, []string{"mount", "--move", base + "/m1", base + "/m2"}, []string{moved}},
		{holder, []string{"umount", base + "/m2"}, []string{detach}},
	}
	for _, s := range steps {
		if out, err := exec.Command("nsenter", append([]string{"--mount=/proc/" + s.in + "/ns/mnt"}, s.call...)...).CombinedOutput(); err != nil {
			t.Fatalf("%s: %v: %s", strings.Join(s.call, " "), err, out)
		}
		evs, err := w.Read()
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, ev := range evs {
			switch {
			case ev.Moved:
				got = append(got, moved)
			case ev.Detach:
				got = append(got, detach)
			default:
				got = append(got, attach)
			}
		}
		if strings.Join(got, " ") != strings.Join(s.want, " ") {
			t.Errorf("%s: %q, want %q", strings.Join(s.call, " "), got, s.want)
		}
	}
}
