package procfs

import (
	"os"
	"runtime"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
)

// TestThreadPinsItsMount: a thread of this process (not its main one)
// unshares a mount namespace, mounts a tmpfs of its own there and goes
// into it (chdir): its cwd, /proc/PID/task/TID/cwd, pins that tmpfs, while
// /proc/PID/cwd is the main thread's. Pins and PinsIn (scoped to the
// thread's namespace, the process's main thread being in another) list it
// as a cwd pin of this process with the thread's tid, and the process's
// Threads name the thread's namespace. The thread ends with its goroutine,
// its namespace and tmpfs with it.
func TestThreadPinsItsMount(t *testing.T) {
	privtest.Require(t)
	dir := t.TempDir()
	type thread struct {
		tid int
		ns  uint32
		dev event.Dev
	}
	got, done := make(chan thread), make(chan struct{})
	t.Cleanup(func() { close(done) })
	start := func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
		if unix.Gettid() == os.Getpid() {
			got <- thread{tid: -1} // the main thread: held until the end, try another
			<-done
			return
		}
		fail := func(what string, err error) { t.Errorf("%s: %v", what, err); got <- thread{} }
		if err := unix.Unshare(unix.CLONE_NEWNS | unix.CLONE_FS); err != nil {
			fail("unshare", err)
			return
		}
		if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
			fail("make / private", err)
			return
		}
		if err := unix.Mount("threadpin", dir, "tmpfs", 0, "size=1m"); err != nil {
			fail("mount tmpfs", err)
			return
		}
		if err := unix.Chdir(dir); err != nil {
			fail("chdir", err)
			return
		}
		var ns, st unix.Stat_t
		_ = unix.Stat("/proc/thread-self/ns/mnt", &ns)
		_ = unix.Stat(".", &st)
		got <- thread{unix.Gettid(), uint32(ns.Ino), event.MakeDev(unix.Major(st.Dev), unix.Minor(st.Dev))}
		<-done
	}
	go start()
	th := <-got
	if th.tid < 0 {
		go start()
		th = <-got
	}
	if th.tid <= 0 {
		t.Fatal("no thread of its own in a namespace of its own")
	}
	self := privtest.MountNS(t, "self")
	find := func(pins []Pin) *Pin {
		for i, p := range pins {
			if p.PID == os.Getpid() && p.Dev == th.dev {
				return &pins[i]
			}
		}
		return nil
	}
	h := Host{}
	all, err := h.Pins([]event.Dev{th.dev})
	if partial(err) != nil {
		t.Fatal(err)
	}
	scoped, err := h.PinsIn([]event.Dev{th.dev}, []uint32{th.ns}, nil)
	if partial(err) != nil {
		t.Fatal(err)
	}
	for name, pins := range map[string][]Pin{"Pins": all, "PinsIn": scoped} {
		p := find(pins)
		if p == nil {
			t.Errorf("%s: no pin of this process on the thread's tmpfs %s, want thread %d's cwd", name, th.dev, th.tid)
			continue
		}
		if p.Kind != PinCwd || p.TID != th.tid || p.Path != dir || p.MntNS != self {
			t.Errorf("%s: pin %+v, want thread %d's cwd %s, the process in mnt:[%d]", name, *p, th.tid, dir, self)
		}
		if len(p.Threads) != 1 || p.Threads[0] != (Thread{TID: th.tid, MntNS: th.ns}) {
			t.Errorf("%s: threads %+v, want thread %d in mnt:[%d]", name, p.Threads, th.tid, th.ns)
		}
	}
}
