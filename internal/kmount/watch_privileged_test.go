package kmount

import (
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// TestReadTakesMoreThanABufferFull: 300 events queued (150 mounts stacked
// on one directory, then their unmounts, in a namespace of the test's
// own) come back from one Read, in the kernel's order, though a read
// takes about a hundred: a Read ends at a read that did not fill the
// buffer, never before. (The namespace is a copy of the node's: a
// directory the node removes meanwhile detaches its copy there too, a
// detach of a mount none of the attaches named; those are left out.)
func TestReadTakesMoreThanABufferFull(t *testing.T) {
	privtest.Require(t)
	w, err := NewWatch()
	if err != nil {
		t.Skipf("no fanotify mount-namespace marks here: %v", err)
	}
	defer w.Close()
	const n = 150
	dir := t.TempDir()
	errc := make(chan error, 1)
	go func() {
		// The thread ends in its own namespace: never unlocked, Go
		// retires it with the goroutine.
		runtime.LockOSThread()
		errc <- stackAndUnstack(w, dir, n)
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
	all, err := w.Read()
	if err != nil {
		t.Fatal(err)
	}
	var attached []uint64
	var got []MountEvent
	for _, ev := range all {
		if !ev.Detach {
			attached = append(attached, ev.Mount)
		}
		if slices.Contains(attached, ev.Mount) {
			got = append(got, ev)
		}
	}
	if len(got) != 2*n {
		t.Fatalf("one Read gave %d events of the test's mounts (%d in all), want %d", len(got), len(all), 2*n)
	}
	for i, ev := range got {
		// Stacked: the last mounted is the first unmounted.
		if ev.Detach != (i >= n) || ev.Moved || (ev.Detach && ev.Mount != got[2*n-1-i].Mount) {
			t.Fatalf("event %d: %+v, want the %d attaches, then their detaches, last first", i, ev, n)
		}
	}
	more, err := w.Read()
	if err != nil {
		t.Fatal(err)
	}
	for _, ev := range more {
		if slices.Contains(attached, ev.Mount) {
			t.Fatalf("a second Read: %+v, want none of the test's mounts", ev)
		}
	}
}

// stackAndUnstack enters a namespace of its own on the calling thread,
// watches it with w, mounts n tmpfs on dir, one on another, and unmounts
// them.
func stackAndUnstack(w *Watch, dir string, n int) error {
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		return err
	}
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return err
	}
	if err := w.Add("/proc/thread-self/ns/mnt"); err != nil {
		return err
	}
	for i := 0; i < n; i++ {
		if err := unix.Mount("kmstack", dir, "tmpfs", 0, "size=64k"); err != nil {
			return err
		}
	}
	for i := 0; i < n; i++ {
		if err := unix.Unmount(dir, 0); err != nil {
			return err
		}
	}
	return nil
}
