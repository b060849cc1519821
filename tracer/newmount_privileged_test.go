package tracer_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
)

// mountIDAt returns the id of the mount at path in this process's
// mountinfo, the id the kernel-side mnt_id read must agree with.
func mountIDAt(t *testing.T, path string) int32 {
	t.Helper()
	mounts, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(path))
	if err != nil || len(mounts) == 0 {
		t.Fatalf("no mount at %s in mountinfo (%v)", path, err)
	}
	return int32(mounts[len(mounts)-1].ID)
}

// TestOpenTreeMoveMount: the new-API form of `mount --rbind`: a recursive
// clone by open_tree, attached by move_mount. Both events carry the clone's
// mount id, the one mountinfo then shows at the target.
func TestOpenTreeMoveMount(t *testing.T) {
	c := startTracer(t)
	base := t.TempDir()
	src := privtest.Mkdir(t, filepath.Join(base, "src"))
	dst := privtest.Mkdir(t, filepath.Join(base, "dst"))
	privtest.Mount(t, "mntleak-src", src, "tmpfs", 0, "")
	privtest.Mkdir(t, filepath.Join(src, "sub"))
	privtest.Mount(t, "mntleak-sub", filepath.Join(src, "sub"), "tmpfs", 0, "")

	var treeFD int
	tid := onThread(func() {
		var err error
		treeFD, err = unix.OpenTree(unix.AT_FDCWD, src, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC|unix.AT_RECURSIVE)
		if err != nil {
			t.Errorf("open_tree: %v", err)
			return
		}
		if err := unix.MoveMount(treeFD, "", unix.AT_FDCWD, dst, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			t.Errorf("move_mount: %v", err)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	t.Cleanup(func() { _ = unix.Unmount(dst, unix.MNT_DETACH) })
	unix.Close(treeFD)
	wantID := mountIDAt(t, dst)
	if _, err := os.Stat(filepath.Join(dst, "sub")); err != nil {
		t.Fatalf("recursive clone lacks sub: %v", err)
	}

	ot := c.waitFor(t, "open_tree", func(e *event.Event) bool { return e.Kind == event.KindOpenTree && e.TID == uint32(tid) })
	if ot.Path != src || ot.Ret != int64(treeFD) || ot.DirFD != unix.AT_FDCWD || ot.MntID != wantID {
		t.Errorf("open_tree path=%q ret=%d dirfd=%d mnt_id=%d, want %q %d AT_FDCWD %d", ot.Path, ot.Ret, ot.DirFD, ot.MntID, src, treeFD, wantID)
	}
	for _, f := range []string{"OPEN_TREE_CLONE", "AT_RECURSIVE"} {
		if !strings.Contains(ot.FlagNames, f) {
			t.Errorf("open_tree flags %q lack %s", ot.FlagNames, f)
		}
	}
	mm := c.waitFor(t, "move_mount", func(e *event.Event) bool { return e.Kind == event.KindMoveMount && e.TID == uint32(tid) })
	if mm.FromFD != int32(treeFD) || mm.ToPath != dst || mm.MntID != wantID || mm.FlagNames != "MOVE_MOUNT_F_EMPTY_PATH" || mm.Ret != 0 {
		t.Errorf("move_mount from_fd=%d to=%q mnt_id=%d flags=%q ret=%d, want %d %q %d MOVE_MOUNT_F_EMPTY_PATH 0",
			mm.FromFD, mm.ToPath, mm.MntID, mm.FlagNames, mm.Ret, treeFD, dst, wantID)
	}
}

// TestMountSetattrPropagation: mount_setattr changing a tree's propagation.
func TestMountSetattrPropagation(t *testing.T) {
	c := startTracer(t)
	dir := t.TempDir()
	privtest.Mount(t, "mntleak-attr", dir, "tmpfs", 0, "")
	for _, prop := range []uint64{unix.MS_SHARED, unix.MS_PRIVATE} {
		var attrErr error
		tid := onThread(func() {
			attrErr = unix.MountSetattr(unix.AT_FDCWD, dir, unix.AT_RECURSIVE,
				&unix.MountAttr{Attr_set: unix.MOUNT_ATTR_NOSUID, Propagation: prop})
		})
		if attrErr != nil {
			t.Fatalf("mount_setattr: %v", attrErr)
		}
		// Both rounds may run on the same OS thread: match the round too.
		ev := c.waitFor(t, "mount_setattr", func(e *event.Event) bool {
			return e.Kind == event.KindMountSetattr && e.TID == uint32(tid) && e.Propagation == prop
		})
		if ev.Path != dir || ev.Propagation != prop || ev.PropagationName != event.PropagationName(prop) ||
			ev.AttrSet != unix.MOUNT_ATTR_NOSUID || ev.FlagNames != "AT_RECURSIVE" || ev.Ret != 0 {
			t.Errorf("got path=%q propagation=%s attr_set=%#x flags=%q ret=%d", ev.Path, ev.PropagationName, ev.AttrSet, ev.FlagNames, ev.Ret)
		}
	}
}

// TestFsopenFsmount: a filesystem context made with fsopen, turned into a
// detached mount by fsmount and attached by move_mount.
func TestFsopenFsmount(t *testing.T) {
	c := startTracer(t)
	dir := t.TempDir()
	var fsfd, mfd int
	tid := onThread(func() {
		var err error
		if fsfd, err = unix.Fsopen("tmpfs", unix.FSOPEN_CLOEXEC); err != nil {
			t.Errorf("fsopen: %v", err)
			return
		}
		if err = unix.FsconfigCreate(fsfd); err != nil {
			t.Errorf("fsconfig: %v", err)
			return
		}
		if mfd, err = unix.Fsmount(fsfd, unix.FSMOUNT_CLOEXEC, unix.MOUNT_ATTR_NODEV); err != nil {
			t.Errorf("fsmount: %v", err)
			return
		}
		if err = unix.MoveMount(mfd, "", unix.AT_FDCWD, dir, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
			t.Errorf("move_mount: %v", err)
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	t.Cleanup(func() { _ = unix.Unmount(dir, unix.MNT_DETACH) })
	defer unix.Close(fsfd)
	defer unix.Close(mfd)
	wantID := mountIDAt(t, dir)

	fo := c.waitFor(t, "fsopen", func(e *event.Event) bool { return e.Kind == event.KindFsopen && e.TID == uint32(tid) })
	if fo.FSType != "tmpfs" || fo.Ret != int64(fsfd) || fo.FlagNames != "CLOEXEC" {
		t.Errorf("fsopen fstype=%q ret=%d flags=%q, want tmpfs %d CLOEXEC", fo.FSType, fo.Ret, fo.FlagNames, fsfd)
	}
	fm := c.waitFor(t, "fsmount", func(e *event.Event) bool { return e.Kind == event.KindFsmount && e.TID == uint32(tid) })
	if fm.FD != int32(fsfd) || fm.Ret != int64(mfd) || fm.AttrFlags != unix.MOUNT_ATTR_NODEV || fm.MntID != wantID {
		t.Errorf("fsmount fs_fd=%d ret=%d attr=%#x mnt_id=%d, want %d %d %#x %d", fm.FD, fm.Ret, fm.AttrFlags, fm.MntID, fsfd, mfd, unix.MOUNT_ATTR_NODEV, wantID)
	}
	mm := c.waitFor(t, "move_mount", func(e *event.Event) bool { return e.Kind == event.KindMoveMount && e.TID == uint32(tid) })
	if mm.MntID != wantID || mm.ToPath != dir {
		t.Errorf("move_mount mnt_id=%d to=%q, want %d %q", mm.MntID, mm.ToPath, wantID, dir)
	}
}
