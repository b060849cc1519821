package procfs

import (
	"os"
	"runtime"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/internal/nsthread"
)

// TestThreadsElsewhere: a thread of this process (not its main one) that
// unshares a mount namespace and stays is listed among the process's
// Threads with its tid and that namespace; one named as mntleak's own
// passing reader (nsthread.ThreadName) is not; the process stays in its
// main thread's namespace. The threads end with their goroutines, and
// their namespaces with them.
func TestThreadsElsewhere(t *testing.T) {
	privtest.Require(t)
	self := privtest.MountNS(t, "self")
	type thread struct {
		tid int
		ns  uint32
	}
	stay := func(name string) (thread, chan struct{}) {
		t.Helper()
		got, done := make(chan thread), make(chan struct{})
		go func() {
			runtime.LockOSThread() // never unlocked: the thread ends with the goroutine
			if unix.Gettid() == os.Getpid() {
				got <- thread{}
				return
			}
			if err := unix.Unshare(unix.CLONE_NEWNS); err != nil {
				t.Errorf("unshare(CLONE_NEWNS): %v", err)
				got <- thread{}
				return
			}
			if name != "" {
				_ = os.WriteFile("/proc/thread-self/comm", []byte(name), 0o600)
			}
			var st unix.Stat_t
			_ = unix.Stat("/proc/thread-self/ns/mnt", &st)
			got <- thread{unix.Gettid(), uint32(st.Ino)}
			<-done
		}()
		th := <-got
		if th.tid == 0 {
			close(done)
			t.Skip("the goroutine ran on the main thread")
		}
		t.Cleanup(func() { close(done) })
		return th, done
	}
	worker, _ := stay("")
	reader, _ := stay(nsthread.ThreadName)
	if worker.ns == self || worker.ns == 0 {
		t.Fatalf("the thread %d is in mnt:[%d], the process's is mnt:[%d]: want one of its own", worker.tid, worker.ns, self)
	}
	procs, err := Host{}.Processes()
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(procs, func(p Process) bool { return p.PID == os.Getpid() })
	if i < 0 {
		t.Fatalf("this process %d is not listed", os.Getpid())
	}
	p := procs[i]
	if p.MntNS != self {
		t.Errorf("the process is in mnt:[%d], want its main thread's mnt:[%d]", p.MntNS, self)
	}
	want := []Thread{{TID: worker.tid, MntNS: worker.ns}}
	if !slices.Equal(p.Threads, want) {
		t.Errorf("threads %+v, want %+v (not the reader thread %d)", p.Threads, want, reader.tid)
	}
	t.Log("threads of " + strconv.Itoa(p.PID) + ": " + strconv.Itoa(len(p.Threads)))
}
