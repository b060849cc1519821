package daemon

import (
	"os"
	"runtime"
	"testing"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// TestBirthIDWhenTheCreatorLeft: a namespace's birth id is read when its
// creation arrives, through the process that made it; runc's
// runc:[1:CHILD] unshares and exits at once, so by then it is often gone
// (incident 3's release was refused: "the ledger has no creation of
// mnt:[N] with birth id M"). The id is then read through a process that
// is in the namespace now.
func TestBirthIDWhenTheCreatorLeft(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "sh", "sleep")
	h := privtest.StartHolder(t, "private", "true")
	var host procfs.Host
	ino, want, err := host.MntNSID(h.PID)
	if err != nil || ino != h.MntNS {
		t.Fatalf("read mnt:[%d]'s id through its holder %d: %v (got mnt:[%d])", h.MntNS, h.PID, err, ino)
	}
	p := Sources{Log: zap.NewNop()}
	const gone = 1<<22 + 7 // above pid_max's default: no such process
	if got := p.BirthID(gone, h.MntNS); got != want {
		t.Errorf("birth id of mnt:[%d] whose creator %d is gone: %d, want %d (read through its process %d)", h.MntNS, gone, got, want, h.PID)
	}
	if got := p.BirthID(h.PID, h.MntNS); got != want {
		t.Errorf("birth id of mnt:[%d] through its creator: %d, want %d", h.MntNS, got, want)
	}
	if got := p.BirthID(gone, 1); got != 0 {
		t.Errorf("birth id of a namespace no process is in: %d, want 0", got)
	}
}

// TestBirthIDThroughTheTracersTasks: where the creator is gone, the birth
// id is read through a task the tracer has in the namespace, before any
// listing of /proc; a thread that unshared alone is one no listing shows
// (/proc lists processes, by their main thread's namespace).
func TestBirthIDThroughTheTracersTasks(t *testing.T) {
	privtest.Require(t)
	type moved struct {
		tid int
		ino uint32
		id  uint64
		err error
	}
	out, done := make(chan moved), make(chan struct{})
	var unshareAlone func()
	unshareAlone = func() {
		runtime.LockOSThread()
		if unix.Gettid() == os.Getpid() {
			// The main thread: held here, so that the unshare is another's.
			go unshareAlone()
			<-done
			runtime.UnlockOSThread()
			return
		}
		// Never unlocked: the thread ends with the goroutine.
		m := moved{tid: unix.Gettid()}
		if m.err = unix.Unshare(unix.CLONE_NEWNS); m.err == nil {
			m.ino, m.id, m.err = procfs.Host{}.MntNSID(m.tid)
		}
		out <- m
		<-done
	}
	go unshareAlone()
	m := <-out
	defer close(done)
	if m.err != nil {
		t.Fatalf("a thread of its own in a new namespace: %v", m.err)
	}
	const gone = 1<<22 + 7
	tasks := func() ([]event.Task, bool, error) {
		return []event.Task{{TID: os.Getpid(), PID: os.Getpid(), MntNS: 1}, {TID: m.tid, PID: os.Getpid(), MntNS: m.ino}}, true, nil
	}
	if got := (Sources{Log: zap.NewNop()}).BirthID(gone, m.ino); got != 0 {
		t.Errorf("without the tasks, birth id %d of mnt:[%d], whose only task is a thread no listing shows: want 0", got, m.ino)
	}
	if got := (Sources{Log: zap.NewNop(), Tasks: tasks}).BirthID(gone, m.ino); got != m.id {
		t.Errorf("with the tasks, birth id of mnt:[%d] through thread %d: %d, want %d", m.ino, m.tid, got, m.id)
	}
}
