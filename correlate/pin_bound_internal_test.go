package correlate

import (
	"testing"
	"time"

	"github.com/mntleak/mntleak/procfs"
)

// The lineage's index of pids follows its members: a process list makes
// its processes known (by their main thread: a thread is not a process);
// a traced exit forgets the pid, also when a list read after it still
// shows the exited process (its parent has not reaped it); a traced join
// makes the pid known where it went; a thread's move is remembered until
// the next list, which shows the thread where it is.
func TestPidIndex(t *testing.T) {
	now := time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)
	procs := []procfs.Process{
		{PID: 1, MntNS: 10, StartTime: 1, Comm: "init"},
		{PID: 5, MntNS: 10, StartTime: 5, Comm: "sh"},
		{PID: 6, MntNS: 11, StartTime: 6, Comm: "app", Threads: []procfs.Thread{{TID: 7, MntNS: 10}}},
	}
	l := NewLineage(time.Minute)
	l.Seed(procs)
	for pid, want := range map[int]bool{1: true, 5: true, 6: true, 7: false, 8: false} {
		if l.knows(pid) != want {
			t.Errorf("after the first list: knows(%d) = %v, want %v", pid, !want, want)
		}
	}
	l.Exit(10, 5, "sh", now)
	if l.knows(5) {
		t.Error("pid 5 known after its exit")
	}
	l.Reconcile(procs, now.Add(time.Second)) // still lists the exited 5
	if l.knows(5) {
		t.Error("pid 5 known again from a list that shows it after its exit")
	}
	l.threadMoved(6, 11, 12)
	if !l.movedIn(6, []uint32{12}) || !l.movedIn(6, []uint32{11}) || l.movedIn(6, []uint32{10}) {
		t.Errorf("moves of pid 6's threads: %v", l.moved[6])
	}
	l.threadMoved(1, 0, 12)
	if !l.movedIn(1, []uint32{99}) {
		t.Error("a move from a namespace not known does not count everywhere")
	}
	for ns := uint32(100); ns < 200; ns++ {
		l.threadMoved(5, ns, ns+1)
	}
	if len(l.moved[5]) > maxMoves || !l.movedIn(5, []uint32{99}) {
		t.Errorf("a process that moved threads through 100 namespaces: %d facts, candidate everywhere %v", len(l.moved[5]), l.movedIn(5, []uint32{99}))
	}
	// Exactly maxMoves namespaces are still told one by one; one more and
	// the process is a candidate everywhere.
	for ns := uint32(300); ns < 300+maxMoves; ns += 2 {
		l.threadMoved(7, ns, ns+1)
	}
	if len(l.moved[7]) != maxMoves || l.movedIn(7, []uint32{99}) || !l.movedIn(7, []uint32{300 + maxMoves - 1}) {
		t.Errorf("a process that moved threads through %d namespaces: %d facts, candidate everywhere %v", maxMoves, len(l.moved[7]), l.movedIn(7, []uint32{99}))
	}
	l.threadMoved(7, 300, 300+maxMoves)
	if !l.movedIn(7, []uint32{99}) {
		t.Errorf("a process that moved threads through %d namespaces is not a candidate everywhere", maxMoves+1)
	}
	l.Reconcile(procs, now.Add(2*time.Second))
	if l.movedIn(6, []uint32{12}) || l.movedIn(1, []uint32{99}) {
		t.Error("threads' moves kept past a process list")
	}
	l.Join(12, 10, Member{PID: 1, Joined: now.Add(3 * time.Second)})
	if !l.knows(1) || l.byPID[1] != 12 {
		t.Errorf("after its join: knows(1) = %v in %d, want true in 12", l.knows(1), l.byPID[1])
	}
	l.Exit(12, 6, "app", now.Add(4*time.Second)) // an exit the lineage has elsewhere
	if l.knows(6) {
		t.Error("pid 6 known after its exit from another namespace than the lineage's")
	}
}
