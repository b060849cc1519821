package correlate

import (
	"slices"
	"time"
)

// A mount namespace lives as long as something holds it: a process in it,
// a bind of its nsfs file, an open fd of that file. The lineage sees only
// processes, so it retires a namespace whose last process left; one that
// a bind or an fd keeps is still the same namespace, and whoever enters it
// later (nsenter --mount=FILE, ip netns exec, another mntleak reading it)
// enters that generation, with its recorded creation, not a new one whose
// creation "predates tracing".

// Pin marks the namespaces kept alive by a bind of their nsfs file (kept,
// as the mount tables show now) and only those: they stay live with no
// process in them, a retired one is revived, and one no longer kept is
// retired at the next reconciliation that finds no process in it.
func (l *Lineage) Pin(kept []uint32, at time.Time) {
	for _, n := range l.live {
		n.pinned = false
	}
	for _, ino := range slices.Sorted(slices.Values(kept)) {
		n := l.live[ino]
		if n == nil {
			n = l.revive(ino)
		}
		if n != nil {
			n.pinned = true
			n.seenAlive(at)
		}
	}
}

// keptOnly reports whether only a bind of its nsfs file keeps n: no known
// process is in it to read its table through.
func (n *Namespace) keptOnly() bool { return n.pinned && len(n.members) == 0 }

// Lost records that events were lost up to at: a namespace that died
// before then may have been freed, and its inode given to one whose
// creation was among the lost events.
func (l *Lineage) Lost(at time.Time) {
	if at.After(l.lostAt) {
		l.lostAt = at
	}
}

// exitRetired applies the exit of a process whose namespace is not live:
// a process list read ahead of the events found no process in it (the
// process had exited, its exit not handled yet) and retired it. The exit
// still says what the namespace's creator ran as, which a bind of its
// nsfs file may bring back into a finding (unshare --mount=FILE true is
// "true" when it exits; named "unshare", the creation would name the
// program that made the namespace, not the one that ran in it). It is the
// latest generation of the inode the process was in: the kernel sends a
// process's exit before it drops its namespaces, so before their inode
// can go to another namespace, and a generation made later is applied by
// its creation event, after this exit. A creator known by its start time
// is told apart from another process with its pid, as renameCreator does.
func (l *Lineage) exitRetired(ino uint32, pid int, comm string) {
	n := l.LastDead(ino, time.Time{})
	if n == nil {
		return
	}
	var start uint64
	for i := len(n.past) - 1; i >= 0; i-- {
		if m := &n.past[i]; m.PID == pid && m.TID == 0 {
			m.Comm, start = comm, m.StartTime
			break
		}
	}
	c := &n.Creator
	if c.PID != pid || n.creatorGone || (c.StartTime != 0 && start != 0 && c.StartTime != start) {
		return
	}
	c.Comm, n.creatorGone = comm, true
}
