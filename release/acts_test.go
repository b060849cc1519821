package release

import (
	"os"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestLiveActsReadTheCallersNamespace: the live acts that only read work
// without root on the caller's own namespace, and agree with each other:
// its file opens with its inode and a birth id, its table (listmount,
// statmount) has the root mount, the top mount at / has that mount's
// unique id (statx), the caller runs in it and a pid that does not exist
// runs nowhere; a file that is no namespace's, and a path that does not
// exist, are errors naming them. (Enter and Detach need root: the
// privileged release tests of cmd/mntleak make them.)
func TestLiveActsReadTheCallersNamespace(t *testing.T) {
	k := Checker{}.kernel()
	if _, ok := k.(liveKernel); !ok {
		t.Fatalf("a Checker with no acts acts through %T, want the live kernel", k)
	}
	fd, ino, id, err := k.OpenNS("/nonexistent/ns|/proc/self/ns/mnt")
	if err != nil {
		if strings.Contains(err.Error(), "NS_GET_MNTNS_ID") {
			t.Skipf("this kernel has no NS_GET_MNTNS_ID: %v", err)
		}
		t.Fatal(err)
	}
	k.Close(fd)
	var st unix.Stat_t
	if err := unix.Stat("/proc/self/ns/mnt", &st); err != nil || uint32(st.Ino) != ino || id == 0 {
		t.Fatalf("mnt:[%d] id %d, want mnt:[%d] (%v) and a birth id", ino, id, st.Ino, err)
	}
	if _, _, _, err := k.OpenNS("/nonexistent/ns"); err == nil || !strings.Contains(err.Error(), "open /nonexistent/ns") {
		t.Errorf("err %v, want the open of /nonexistent/ns", err)
	}
	if _, _, _, err := k.OpenNS("/proc/self/status"); err == nil || !strings.Contains(err.Error(), "/proc/self/status: NS_GET_MNTNS_ID") {
		t.Errorf("err %v, want no birth id from a file that is no namespace's", err)
	}
	mounts, err := k.ReadTable(id)
	if err != nil {
		t.Skipf("listmount/statmount of the caller's namespace: %v", err)
	}
	var root *Mount
	for i, m := range mounts {
		if m.Point == "/" && m.NS == id && (root == nil || m.ID > root.ID) {
			root = &mounts[i] // the top one at /
		}
		if i > 0 && m.ID <= mounts[i-1].ID {
			t.Errorf("mount %d after %d: want increasing unique ids", m.ID, mounts[i-1].ID)
		}
	}
	if root == nil {
		t.Fatalf("no mount at / in %d mounts", len(mounts))
	}
	top, unique, ok, err := k.TopMount("/", ino)
	if err != nil || !ok {
		t.Fatalf("the top mount at /: unique %d, %v, %v", unique, ok, err)
	}
	k.Close(top)
	if unique != root.ID {
		t.Errorf("statx says unique mount %d at /, the table %d", unique, root.ID)
	}
	if _, _, _, err := k.TopMount("/nonexistent/x", ino); err == nil || !strings.Contains(err.Error(), "open /nonexistent/x in mnt:[") {
		t.Errorf("err %v, want the open of /nonexistent/x", err)
	}
	if !k.RunsIn(uint32(os.Getpid()), ino) || k.RunsIn(uint32(os.Getpid()), ino+1) || k.RunsIn(1<<22+1, ino) {
		t.Errorf("RunsIn: want this process in mnt:[%d] only, and no process for a pid above pid_max", ino)
	}
	proc, err := k.OpenProc()
	if err != nil {
		t.Fatal(err)
	}
	k.Close(proc)
}
