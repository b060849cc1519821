package privtest

import (
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// KeepNamespace makes a mount namespace no process runs in, kept by a bind
// of its nsfs file at file (which must exist, on a mount that is not
// shared), with private propagation, running cmd in it first (none: true).
// It returns the namespace's inode. The bind goes at cleanup, and the
// namespace with it.
func KeepNamespace(t testing.TB, file string, cmd ...string) uint32 {
	t.Helper()
	return keepNamespace(t, nil, file, file, cmd)
}

// KeepNamespace is the package's KeepNamespace, made from the node's mount
// namespace (file is a path there).
func (n Node) KeepNamespace(t testing.TB, file string, cmd ...string) uint32 {
	t.Helper()
	pid := strconv.Itoa(n.PID)
	return keepNamespace(t, []string{"nsenter", "-t", pid, "-m", "--"}, file, "/proc/"+pid+"/root"+file, cmd)
}

func keepNamespace(t testing.TB, prefix []string, file, fromHere string, cmd []string) uint32 {
	t.Helper()
	if len(cmd) == 0 {
		cmd = []string{"true"}
	}
	argv := append(append(append([]string(nil), prefix...), "unshare", "--mount="+file, "--propagation", "private"), cmd...)
	// unshare(1)'s bind of the new namespace's file fails with EINVAL now
	// and then (about 1 in 6 here, outside mntleak): tried up to 8 times.
	for i := 0; ; i++ {
		out, err := exec.Command(argv[0], argv[1:]...).CombinedOutput()
		if err == nil {
			break
		}
		if i == 7 {
			t.Fatalf("%v: %v: %s", argv, err, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
	umount := append(append([]string(nil), prefix...), "umount", file)
	t.Cleanup(func() {
		// A test may have unmounted it already (a fix it applied).
		if out, err := exec.Command(umount[0], umount[1:]...).CombinedOutput(); err != nil && !strings.Contains(string(out), "not mounted") {
			t.Errorf("%v: %v: %s", umount, err, out)
		}
	})
	var st unix.Stat_t
	if err := unix.Stat(fromHere, &st); err != nil {
		t.Fatalf("stat %s: %v", fromHere, err)
	}
	return uint32(st.Ino)
}
