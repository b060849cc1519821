package tracer_test

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/tracer"
)

// TestHooksSameEvents runs both paths at once, where the kernel has BPF
// trampolines (the lab's 6.1 and 6.12 guests): one tracer on the sys_exit
// tracepoint, one on fexit programs, both seeing the same calls of one
// thread. Every event the calls make must come out of both, in the same
// order, equal in every field but the kernel time (fexit runs at the
// function's return, a moment before sys_exit): the traced mount calls,
// the new mount API, unshare and setns, and EBUSY failures of umount2,
// rmdir, unlinkat and renameat.
func TestHooksSameEvents(t *testing.T) {
	privtest.Require(t)
	if err := tracer.ProbeTrampoline(); err != nil {
		t.Skipf("no BPF trampolines on this kernel: %v", err)
	}
	tp := startTracerWith(t, tracer.Config{Hooks: tracer.HooksTracepoint}, zaptest.NewLogger(t))
	fx := startTracerWith(t, tracer.Config{Hooks: tracer.HooksTrampoline}, zaptest.NewLogger(t))
	if h, why := fx.tr.Hooks(); h != tracer.HooksTrampoline {
		t.Fatalf("forced trampoline runs %v (%s)", h, why)
	}
	base := t.TempDir()
	mnt := privtest.Mkdir(t, filepath.Join(base, "busy"))
	other := privtest.Mkdir(t, filepath.Join(base, "other"))
	tid := onThread(func() { sameEventsCalls(t, base, mnt, other) })
	if t.Failed() {
		t.FailNow()
	}
	// The last call's event on both (the deferred detach of the mount
	// already gone: EINVAL), then both streams of the thread.
	last := func(e *event.Event) bool {
		return e.TID == uint32(tid) && e.Kind == event.KindUmount && e.Ret == -int64(unix.EINVAL)
	}
	tp.waitFor(t, "the last umount (tracepoint)", last)
	fx.waitFor(t, "the last umount (trampoline)", last)
	time.Sleep(200 * time.Millisecond)
	ofThread := func(e *event.Event) bool { return e.TID == uint32(tid) }
	a, b := afterPriming(t, "tracepoint", tp.matching(ofThread)), afterPriming(t, "trampoline", fx.matching(ofThread))
	if len(a) < 12 {
		t.Errorf("tracepoint path: %d events of the thread, want at least 12", len(a))
	}
	if len(a) != len(b) {
		t.Errorf("tracepoint path %d events, trampoline path %d", len(a), len(b))
	}
	for i := 0; i < len(a) && i < len(b); i++ {
		x, y := a[i], b[i]
		x.MonoNS, y.MonoNS, x.Time, y.Time = 0, 0, time.Time{}, time.Time{}
		if !reflect.DeepEqual(x, y) {
			t.Errorf("event %d differs:\ntracepoint %+v\ntrampoline %+v", i, x, y)
		}
	}
	for _, e := range b {
		t.Logf("trampoline: %s %s ret=%d %s%s", e.Kind, e.Syscall, e.Ret, e.Path, e.Target)
	}
}

// afterPriming drops the thread's first event, the setns that tells each
// tracer the thread's namespace: each tracer knows a thread's namespace
// from its own sched_process_fork program, so a thread born between the
// two tracers' starts is known to one only, and the first setns or unshare
// says mntns_before 0 on the other (bpf/nsproc.bpf.c). After the priming
// setns both know it.
func afterPriming(t *testing.T, path string, evs []event.Event) []event.Event {
	t.Helper()
	if len(evs) == 0 || evs[0].Kind != event.KindSetns || evs[0].Ret != 0 {
		t.Fatalf("%s path: the thread's first event is not the priming setns: %+v", path, evs)
	}
	return evs[1:]
}

// sameEventsCalls makes the calls TestHooksSameEvents compares, on one
// locked thread; it leaves no mount and returns to the caller's namespace.
// The first call is a setns to the thread's own namespace (afterPriming).
func sameEventsCalls(t *testing.T, base, mnt, other string) {
	own, err := os.Open("/proc/thread-self/ns/mnt")
	if err != nil {
		t.Errorf("open own namespace: %v", err)
		return
	}
	defer own.Close()
	// setns of a mount namespace needs a thread of its own fs_struct.
	if err := unix.Unshare(unix.CLONE_FS); err != nil {
		t.Errorf("unshare CLONE_FS: %v", err)
		return
	}
	if err := unix.Setns(int(own.Fd()), unix.CLONE_NEWNS); err != nil {
		t.Errorf("priming setns: %v", err)
		return
	}
	if err := unix.Mount("mntleak-parity", mnt, "tmpfs", 0, "size=1m"); err != nil {
		t.Errorf("mount: %v", err)
		return
	}
	defer unix.Unmount(mnt, unix.MNT_DETACH)
	// EBUSY: the mount point itself, removed or renamed.
	if err := unix.Rmdir(mnt); err != unix.EBUSY {
		t.Errorf("rmdir of a mount point: %v, want EBUSY", err)
	}
	if err := unix.Unlinkat(unix.AT_FDCWD, mnt, unix.AT_REMOVEDIR); err != unix.EBUSY {
		t.Errorf("unlinkat of a mount point: %v, want EBUSY", err)
	}
	if err := unix.Renameat(unix.AT_FDCWD, mnt, unix.AT_FDCWD, filepath.Join(base, "moved")); err != unix.EBUSY {
		t.Errorf("renameat of a mount point: %v, want EBUSY", err)
	}
	// umount2 EBUSY: a file open on the mount.
	f, err := os.Create(filepath.Join(mnt, "held"))
	if err != nil {
		t.Errorf("create: %v", err)
		return
	}
	if err := unix.Unmount(mnt, 0); err != unix.EBUSY {
		t.Errorf("umount2 of a held mount: %v, want EBUSY", err)
	}
	f.Close()
	// The new mount API: a clone of the mount attached elsewhere.
	fd, err := unix.OpenTree(unix.AT_FDCWD, mnt, unix.OPEN_TREE_CLONE|unix.OPEN_TREE_CLOEXEC)
	if err != nil {
		t.Errorf("open_tree: %v", err)
		return
	}
	if err := unix.MoveMount(fd, "", unix.AT_FDCWD, other, unix.MOVE_MOUNT_F_EMPTY_PATH); err != nil {
		t.Errorf("move_mount: %v", err)
	}
	unix.Close(fd)
	attr := &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}
	if err := unix.MountSetattr(unix.AT_FDCWD, other, 0, attr); err != nil {
		t.Errorf("mount_setattr: %v", err)
	}
	if err := unix.Unmount(other, 0); err != nil {
		t.Errorf("umount2 %s: %v", other, err)
	}
	// unshare and setns back to the caller's namespace.
	ns, err := os.Open("/proc/self/ns/mnt")
	if err != nil {
		t.Errorf("open own namespace: %v", err)
		return
	}
	defer ns.Close()
	if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
		t.Errorf("unshare: %v", err)
		return
	}
	if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNS); err != nil {
		t.Errorf("setns: %v", err)
	}
	if err := unix.Unmount(mnt, 0); err != nil {
		t.Errorf("umount2 %s: %v", mnt, err)
	}
}

// TestHooksChoice: on this kernel, auto runs the trampolines exactly when
// the probe attaches one (this machine's 6.18: the tracepoint), and a
// forced trampoline where it does not is one line naming the flag.
func TestHooksChoice(t *testing.T) {
	privtest.Require(t)
	probe := tracer.ProbeTrampoline()
	want := tracer.HooksTrampoline
	if probe != nil {
		want = tracer.HooksTracepoint
	}
	c := startTracerWith(t, tracer.Config{}, zaptest.NewLogger(t))
	if got, why := c.tr.Hooks(); got != want || why == "" {
		t.Errorf("auto runs %v (%s), want %v (probe: %v)", got, why, want, probe)
	}
	tr, err := tracer.New(tracer.Config{Sink: func(*event.Event) {}, Hooks: tracer.HooksTrampoline}, zaptest.NewLogger(t))
	if probe == nil {
		if err != nil {
			t.Fatalf("forced trampoline: %v", err)
		}
		tr.Close()
		return
	}
	if err == nil {
		tr.Close()
		t.Fatal("forced trampoline on a kernel without them: no error")
	}
	msg := err.Error()
	if !strings.HasPrefix(msg, "--hooks=trampoline: this kernel cannot attach an fexit program to ") || strings.Contains(msg, "\n") {
		t.Errorf("forced trampoline error %q: want one line naming the flag", msg)
	}
}
