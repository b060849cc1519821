package correlate

import (
	"cmp"
	"slices"
	"time"

	"github.com/mntleak/mntleak/procfs"
)

// What a process list tells the lineage: every namespace's processes at
// once (Reconcile), or the processes of one namespace that the tracer's
// task map named (place, tasks.go).

// Reconcile brings the lineage in line with a /proc snapshot taken at now
// (zero for the startup snapshot): members appear and disappear, a pid
// reused by another process is told apart by its start time, and
// namespaces without any process are retired.
func (l *Lineage) Reconcile(procs []procfs.Process, now time.Time) {
	present := map[uint32]map[int]procfs.Process{}
	for _, p := range procs {
		inNamespaces(p, func(ns uint32, key int) {
			if present[ns] == nil {
				present[ns] = map[int]procfs.Process{}
			}
			present[ns][key] = p
		})
	}
	// Retirements and departures are applied in order (inode; start time,
	// pid): they append to the dead list and to past members, which reach
	// findings. Only those are sorted, not every namespace and member.
	var retired []*Namespace
	for _, n := range l.live {
		procsHere := present[n.Ino]
		if len(procsHere) > 0 {
			l.shows(n, procsHere, now)
			continue
		}
		if !n.pinned { // else alive with no process: a bind of its nsfs file keeps it
			retired = append(retired, n)
		}
	}
	slices.SortFunc(retired, func(a, b *Namespace) int { return cmp.Compare(a.Ino, b.Ino) })
	for _, n := range retired {
		l.retire(n, n.deathTime(now))
	}
	for ino, procsHere := range present {
		n, _ := l.liveOrInferred(ino)
		l.joins(n, procsHere)
	}
	l.index()
	l.expire(now)
}

// inNamespaces calls fn with each namespace p is in and the key it is a
// member there by: a process by its pid in its main thread's namespace,
// and by the tid of each of its threads in a namespace of its own
// (Process.Threads).
func inNamespaces(p procfs.Process, fn func(ns uint32, key int)) {
	fn(p.MntNS, p.PID)
	for _, th := range p.Threads {
		fn(th.MntNS, th.TID)
	}
}

// shows applies to live namespace n the processes a list shows in it (by
// member key): n was alive at now; its members that are not among them,
// or whose pid another process has now, leave in order; the others take
// the list's name (exec changes it), start time and cgroup.
func (l *Lineage) shows(n *Namespace, procsHere map[int]procfs.Process, now time.Time) {
	n.seenAlive(now)
	var gone []Member
	for key, m := range n.members {
		p, ok := procsHere[key]
		if !ok || (m.StartTime != 0 && p.StartTime != m.StartTime) {
			gone = append(gone, *m) // gone, or its pid now belongs to another process
			continue
		}
		if m.StartTime == 0 {
			m.StartTime = p.StartTime
		}
		m.Comm = p.Comm // exec changes it; pid and start time stay
		l.renameCreator(m.PID, p.StartTime, p.Comm, p.Cgroup, false)
		if m.Cgroup == "" {
			m.Cgroup = p.Cgroup
		}
	}
	sortMembers(gone)
	for _, m := range gone {
		n.leave(m.key(), now)
	}
}

// joins makes the processes a list shows in n that it does not know its
// members; a namespace whose creation was not seen is named by its oldest
// process (the one a remembered join named may be gone since).
func (l *Lineage) joins(n *Namespace, procsHere map[int]procfs.Process) {
	for key, p := range procsHere {
		if _, ok := n.members[key]; !ok {
			m := &Member{PID: p.PID, StartTime: p.StartTime, Comm: p.Comm, Cgroup: p.Cgroup}
			if key != p.PID {
				m.TID = key
			}
			n.members[key] = m
		}
	}
	if n.Origin == OriginPredates && (n.Creator.PID == 0 || n.members[n.Creator.key()] == nil) {
		if oldest := n.Members(); len(oldest) > 0 {
			l.untrack(n)
			l.setCreator(n, oldest[0])
		}
	}
}

// place applies to live namespace n alone the processes that are in it
// now (procs: those the tracer's task map has there, read from /proc),
// as Reconcile would: members leave and join, and the pid index follows
// them. The threads' moves and the rest of the lineage stay as the last
// list left them.
func (l *Lineage) place(n *Namespace, procs []procfs.Process, now time.Time) {
	procsHere := map[int]procfs.Process{}
	for _, p := range procs {
		inNamespaces(p, func(ns uint32, key int) {
			if ns == n.Ino {
				procsHere[key] = p
			}
		})
	}
	l.shows(n, procsHere, now)
	l.joins(n, procsHere)
	for pid, ino := range l.byPID {
		if ino == n.Ino && n.members[pid] == nil {
			delete(l.byPID, pid)
		}
	}
	for key, m := range n.members {
		if m.TID == 0 && key == m.PID {
			l.byPID[m.PID] = n.Ino
		}
	}
}
