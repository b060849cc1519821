package correlate

import (
	"slices"
	"strconv"
	"strings"

	"github.com/mntleak/mntleak/procfs"
)

// A failure's pin search for a copy in holder namespaces looks only at
// the processes that can be in one of them (procfs.NamespacePinner checks
// each by its own namespace link, as it checks every process without
// candidates): on a node of thousands of processes, one link and one
// thread count each was most of what a failure cost the daemon. The
// candidates, among the pids /proc lists now (in its order, so the pins
// come in the order the full search gives them):
//
//   - the holder namespaces' members, by their main thread or by a thread
//     a process list showed there (Process.Threads);
//   - every pid the lineage does not know: forks are not traced, so a
//     process forked since the last process list (in a holder namespace,
//     or by a thread of one) is told by nothing but its link; a pid whose
//     exit was traced is no longer known (its reuse is a new process); but
//     not a kernel thread the last list showed outside the holder
//     namespaces (kernelElsewhere: about sixty on any node, never a pin);
//   - every process a thread of which moved (setns, unshare) since the
//     last process list, from or into a holder namespace: a thread other
//     than the main one moves alone (the process stays where its main
//     thread is, lineageEvent), and a main thread that moves leaves its
//     sibling threads behind. Thread exits are not traced: the fact stays
//     until the process exits or a process list is read, and the search
//     reads the process's threads anyway (a thread that moved may have
//     spawned one that stays after it ended). A move from a namespace the
//     lineage could not tell makes the process a candidate everywhere.
//
// Where the tracer tells the threads born or moved since it began, where
// they are now (Options.Tasks, the daemon's), and the last process list
// told the kernel's threads and the processes it could not read
// (procfs.ProcessLister), /proc is not listed: the candidates are the
// members, the movers, those tasks in a holder namespace and the
// unreadable (taskCandidates). A listing of a busy node's /proc was a third
// of what a failure cost the daemon.
//
// The search falls back to every pid in /proc (nil candidates) when the
// lineage cannot be trusted to know where the others are:
//
//   - the Proc cannot list pids alone (procfs.Lister; the Recorder, so a
//     recording holds the full answers and a replay asks the same);
//   - no process list was read yet (Start's snapshot is one);
//   - events were lost since the last process list (a loss handled after
//     it, or dated at or after it: lostAt): a lost exit makes a reused pid
//     look known, a lost setns, unshare or CLONE_NEWNS clone leaves a
//     process or thread where it no longer is; a list read after a loss
//     brings the lineage back in line (Start's snapshot is read before
//     any event, so a loss at all since then counts);
//   - /proc could not be listed.
//
// A block device, a whole filesystem, or a device that is not an
// anonymous one is searched over every process before this (pinsOn).
// What remains is a pid reused by a process the list did not see while
// the lineage still has its earlier owner, whose exit it has not read yet
// (it runs behind the kernel): the kernel hands pids out in cycles, so
// that takes the whole pid space's worth of forks between that exit and
// the failure. (A zombie a list shows after its exit was read stays
// unknown: index.)

// pinCandidates returns the pids a pin search in the namespaces nss must
// look at (members: their members), or nil for every process.
func (c *Correlator) pinCandidates(nss []uint32, members []Member) []int {
	if !c.scanned || c.lostSinceScan || !c.lineage.lostAt.Before(c.lastScan) {
		return nil
	}
	if out, ok := c.taskCandidates(nss, members); ok {
		return out
	}
	lister, ok := c.proc.(procfs.Lister)
	if !ok {
		return nil
	}
	all, err := lister.PIDs()
	if err != nil {
		return nil
	}
	want := make(map[int]bool, len(members))
	for _, m := range members {
		want[m.PID] = true
	}
	out := []int{}
	for _, pid := range all {
		if want[pid] || (!c.lineage.knows(pid) && !c.lineage.kernelElsewhere(pid, nss)) || c.lineage.movedIn(pid, nss) {
			out = append(out, pid)
		}
	}
	return out
}

// taskCandidates is pinCandidates without a listing of /proc, where the
// tracer tells the threads born (or moved) since it began, where they are
// now (Options.Tasks), and the last process list told the kernel's
// threads and the processes it could not read (procfs.ProcessLister). A
// process is in a holder namespace now only if it is a member there (it
// was at the last list, or an event since put it there), or a thread of
// it moved (traced), or it was born since tracing began (the tracer has
// each of its threads where it is now), or the last list could not read
// it. Those are the candidates, in /proc's order (by name). Not when the
// tracer's list may be incomplete (its bound) or cannot be read.
func (c *Correlator) taskCandidates(nss []uint32, members []Member) ([]int, bool) {
	tasks, ok := c.liveTasks()
	if !ok {
		return nil, false
	}
	in := map[int]bool{}
	for _, m := range members {
		in[m.PID] = true
	}
	for pid := range c.lineage.moved {
		if c.lineage.movedIn(pid, nss) {
			in[pid] = true
		}
	}
	for pid := range c.lineage.unreadable {
		in[pid] = true
	}
	for _, t := range tasks {
		if slices.Contains(nss, t.MntNS) {
			in[t.PID] = true
		}
	}
	out := make([]int, 0, len(in))
	for pid := range in {
		out = append(out, pid)
	}
	slices.SortFunc(out, func(a, b int) int { return strings.Compare(strconv.Itoa(a), strconv.Itoa(b)) })
	return out, true
}

// listed records what a process list showed besides its processes: the
// kernel's threads and the processes it could not read.
func (l *Lineage) listed(pl procfs.ProcessList) {
	clear(l.kernel)
	clear(l.unreadable)
	for _, k := range pl.Kernel {
		l.kernel[k.PID] = k.MntNS
	}
	for _, pid := range pl.Unreadable {
		l.unreadable[pid] = true
	}
}

// kernelElsewhere reports whether pid is a kernel thread the last process
// list showed outside nss, which no exit since has ended. No kernel thread
// is ever named as a pin (procfs), and the kernel gives no thread of its
// own another mount namespace but at boot (devtmpfs's); a helper the kernel
// starts as one and execs (modprobe, a core dump's pipe) stays in the
// kernel's namespace unless it moves, and a move is traced (movedIn).
func (l *Lineage) kernelElsewhere(pid int, nss []uint32) bool {
	ns, ok := l.kernel[pid]
	return ok && !slices.Contains(nss, ns)
}

// knows reports whether the lineage has pid as the member of a live
// namespace by its main thread: byPID's entry, checked against the
// namespace (a member that left since, by any path, is not known).
func (l *Lineage) knows(pid int) bool {
	ino, ok := l.byPID[pid]
	if !ok {
		return false
	}
	n := l.live[ino]
	if n == nil {
		return false
	}
	m := n.members[pid]
	return m != nil && m.TID == 0
}

// movedIn reports whether a thread of pid moved from or into one of nss
// (or from a namespace not known) since the last process list.
func (l *Lineage) movedIn(pid int, nss []uint32) bool {
	for _, ns := range l.moved[pid] {
		if ns == 0 || slices.Contains(nss, ns) {
			return true
		}
	}
	return false
}

// threadMoved records that a thread of pid moved from one namespace (0:
// not known) into another. A process that keeps moving threads about (a
// reader of every namespace, mntleak's own) between two process lists is
// a candidate everywhere past maxMoves namespaces: the facts stay bounded.
func (l *Lineage) threadMoved(pid int, from, to uint32) {
	for _, ns := range []uint32{from, to} {
		if !slices.Contains(l.moved[pid], ns) {
			l.moved[pid] = append(l.moved[pid], ns)
		}
	}
	if len(l.moved[pid]) > maxMoves {
		l.moved[pid] = []uint32{0}
	}
}

const maxMoves = 64

// exited forgets pid: its exit was traced, and a process that has its pid
// later is one the lineage has not seen.
func (l *Lineage) exited(pid int) {
	delete(l.byPID, pid)
	delete(l.moved, pid)
	delete(l.kernel, pid)
	delete(l.unreadable, pid)
}

// index rebuilds byPID from a process list just applied, and forgets the
// threads' moves (the list shows each thread where it is). A member whose
// exit was traced before the list (a zombie the list still showed) stays
// unknown.
func (l *Lineage) index() {
	clear(l.byPID)
	clear(l.moved)
	for ino, n := range l.live {
		var gone map[int]bool
		for _, m := range n.past {
			if m.TID == 0 {
				if gone == nil {
					gone = map[int]bool{}
				}
				gone[m.PID] = true
			}
		}
		for key, m := range n.members {
			if m.TID == 0 && key == m.PID && !gone[m.PID] {
				l.byPID[m.PID] = ino
			}
		}
	}
}
