package kmount

import (
	"os"
	"os/exec"
	"strconv"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestWatchReportsDetachAndAttach: a mark on a holder's namespace reports
// FAN_MNT_DETACH with the unique id of its copy when the node's rmdir
// detaches that copy, and FAN_MNT_ATTACH with the id of a mount made
// inside it; the oracle is the holder's table read by id before and after.
func TestWatchReportsDetachAndAttach(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "sh", "sleep", "mount", "umount")
	w, err := NewWatch()
	if err != nil {
		t.Skipf("no fanotify mount-namespace marks here: %v", err)
	}
	defer w.Close()
	node := privtest.NewDetachableCopy(t, "kmwatch")
	vol, own, holder := node.Vol, node.Own, node.Holder
	nsFile := "/proc/" + strconv.Itoa(holder) + "/ns/mnt"
	copyID := mountAt(t, nsFile, vol)
	if err := w.Add(nsFile); err != nil {
		t.Fatal(err)
	}
	node.Detach(t)
	if got := readEvents(t, w, 1); got[0] != (MountEvent{Detach: true, Mount: copyID, PID: got[0].PID}) {
		t.Errorf("after the node's rmdir: %+v, want the detach of mount %d", got, copyID)
	}
	if id := lookup(t, nsFile, vol); id != 0 {
		t.Errorf("the holder's table still has mount %d at %s", id, vol)
	}
	if out, err := exec.Command("nsenter", "--mount="+nsFile, "mount", "-t", "tmpfs", "kmown", own).CombinedOutput(); err != nil {
		t.Fatalf("mount in the holder: %v: %s", err, out)
	}
	ownID := mountAt(t, nsFile, own)
	if got := readEvents(t, w, 1); got[0] != (MountEvent{Mount: ownID, PID: got[0].PID}) {
		t.Errorf("after a mount in the holder: %+v, want the attach of mount %d", got, ownID)
	}
}

// mountAt is the unique id of the mount at p in the namespace of nsFile,
// read by its birth id.
func mountAt(t *testing.T, nsFile, p string) uint64 {
	t.Helper()
	id := lookup(t, nsFile, p)
	if id == 0 {
		t.Fatalf("no mount at %s in %s", p, nsFile)
	}
	return id
}

func lookup(t *testing.T, nsFile, p string) uint64 {
	t.Helper()
	f, err := os.Open(nsFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ns, err := NSID(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	mounts, err := Table(ns)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mounts {
		if m.Point == p {
			return m.ID
		}
	}
	return 0
}

// readEvents waits up to 5 s for exactly n events, and returns them.
func readEvents(t *testing.T, w *Watch, n int) []MountEvent {
	t.Helper()
	var got []MountEvent
	deadline := time.Now().Add(5 * time.Second)
	for len(got) < n && time.Now().Before(deadline) {
		evs, err := w.Read()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, evs...)
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond) // none more may follow
	more, err := w.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got = append(got, more...); len(got) != n {
		t.Fatalf("%d events %+v, want %d", len(got), got, n)
	}
	return got
}
