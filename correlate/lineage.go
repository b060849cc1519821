package correlate

import (
	"slices"
	"time"

	"github.com/mntleak/mntleak/event"
)

func (n *Namespace) leave(pid int, at time.Time) {
	m, ok := n.members[pid]
	if !ok {
		return
	}
	delete(n.members, pid)
	m.Left = at
	n.past = append(n.past, *m)
	if len(n.past) > maxPast {
		n.past = n.past[len(n.past)-maxPast:]
	}
}

// DiedSince returns the dead namespaces whose last member left at or after t.
func (l *Lineage) DiedSince(t time.Time) []*Namespace {
	var out []*Namespace
	for _, n := range l.dead {
		if !n.Died.Before(t) {
			out = append(out, n)
		}
	}
	return out
}

// LastDead returns the latest dead generation of namespace ino whose last
// member left at or after t, or nil.
func (l *Lineage) LastDead(ino uint32, t time.Time) *Namespace {
	for i := len(l.dead) - 1; i >= 0; i-- {
		if n := l.dead[i]; n.Ino == ino && !n.Died.Before(t) {
			return n
		}
	}
	return nil
}

// Created records a namespace creation seen as an event. A live entry with
// the same inode is an earlier generation that died unseen: it is retired.
func (l *Lineage) Created(ino, parent uint32, origin Origin, creator Member, ev *event.Event) *Namespace {
	at := creator.Joined
	if old := l.live[ino]; old != nil {
		old.replaced = true
		l.retire(old, at)
	}
	n := &Namespace{Ino: ino, Origin: origin, Created: at, Parent: parent, Event: ev, members: map[int]*Member{}}
	if ev != nil {
		n.ID = ev.NewMntNSID
	}
	n.seenAlive(at)
	l.live[ino] = n
	l.changes++
	l.setCreator(n, creator)
	return n
}

// setCreator sets a namespace's creator and indexes it by pid, so that
// exits and /proc refreshes reach the namespaces a process created without
// walking every namespace.
func (l *Lineage) setCreator(n *Namespace, m Member) {
	n.Creator = m
	if m.PID != 0 {
		l.byCreator[m.PID] = append(l.byCreator[m.PID], n)
	}
}

// Join adds a member to a namespace, moving it out of the one it was in.
func (l *Lineage) Join(ino, from uint32, m Member) {
	if prev := l.live[from]; prev != nil && from != ino {
		prev.leave(m.PID, m.Joined)
	}
	n, inferred := l.liveOrInferred(ino)
	if inferred {
		// Joined a namespace whose creation was never seen.
		l.setCreator(n, m)
	}
	mm := m
	n.members[m.key()] = &mm
	if m.TID == 0 {
		l.byPID[m.PID] = ino
	}
	n.seenAlive(m.Joined)
}

// Exit records the exit of a thread-group leader in namespace ino. Its
// comm at exit is what it ran as (exec changes it after unshare: the
// creator of a MountFlags=slave namespace is "unshare" or "(dockerd)" when
// it unshares and "dockerd" when it exits).
func (l *Lineage) Exit(ino uint32, pid int, comm string, at time.Time) {
	l.exited(pid)
	n := l.live[ino]
	if n == nil {
		l.exitRetired(ino, pid, comm)
		return
	}
	n.lastExit = at
	n.seenAlive(at)
	var start uint64
	if m := n.members[pid]; m != nil {
		m.Comm, start = comm, m.StartTime
	}
	l.renameCreator(pid, start, comm, "", true)
	n.leave(pid, at)
}

// renameCreator updates the creator's name in the namespaces it created,
// until it exits (after that its pid may belong to someone else).
func (l *Lineage) renameCreator(pid int, start uint64, comm, cgroup string, exited bool) {
	for _, n := range l.byCreator[pid] {
		c := &n.Creator
		if c.PID != pid || n.creatorGone || (c.StartTime != 0 && start != 0 && c.StartTime != start) {
			continue
		}
		c.Comm = comm
		if cgroup != "" {
			c.Cgroup = cgroup
		}
		if c.StartTime == 0 {
			c.StartTime = start
		}
		n.creatorGone = exited
	}
}

// deathTime dates the death of n, which a scan at now found with no
// process: its last member's exit when that exit was seen (every member
// left, or came back only as a scan's listing of the exited process
// before its parent reaped it), now when a member it still had is gone
// unseen (killed, and its exit not read yet by a correlator running
// behind the kernel). An exit seen earlier from another process in it (a
// shell's findmnt) does not date it: n still had a member then, and a
// copy, at an unmount since.
func (n *Namespace) deathTime(now time.Time) time.Time {
	if n.lastExit.IsZero() {
		return now
	}
	for _, m := range n.members {
		if !n.left(m.PID, m.StartTime) {
			return now
		}
	}
	return n.lastExit
}

func (l *Lineage) retire(n *Namespace, at time.Time) {
	if l.live[n.Ino] == n {
		delete(l.live, n.Ino)
		l.changes++
		l.untrack(n)
	}
	// In Members' order (start time, pid), not the map's: Past() is in
	// findings, and a replay must read the same every time.
	for _, m := range n.Members() {
		n.leave(m.key(), at)
	}
	n.Dead, n.Died = true, at
	l.dead = append(l.dead, n)
}

func (l *Lineage) expire(now time.Time) {
	if now.IsZero() {
		return
	}
	cut := 0
	for cut < len(l.dead) && now.Sub(l.dead[cut].Died) > l.retention {
		cut++
	}
	if cut > 0 {
		l.dead = append([]*Namespace(nil), l.dead[cut:]...)
	}
}

// namespaceOf returns the live namespace pid is a member of, else its
// parent's, else 0.
func (l *Lineage) namespaceOf(pid, ppid int) uint32 {
	var parent uint32
	for ino, n := range l.live {
		if _, ok := n.members[pid]; ok {
			return ino
		}
		if _, ok := n.members[ppid]; ok && ppid != 0 {
			parent = ino
		}
	}
	return parent
}

// liveOrInferred returns the live namespace ino: the one the lineage has,
// its latest dead generation brought back (revive), or else a new one
// whose creation was never seen (inferred: true, it predates tracing).
func (l *Lineage) liveOrInferred(ino uint32) (n *Namespace, inferred bool) {
	if n = l.live[ino]; n == nil {
		n = l.revive(ino)
	}
	if n == nil {
		n = &Namespace{Ino: ino, Origin: OriginPredates, Inferred: true, members: map[int]*Member{}}
		l.live[ino] = n
		l.changes++
		inferred = true
	}
	return n, inferred
}

// revive brings back the latest dead generation of namespace ino when the
// namespace is seen alive again (a process entered it, a bind of its nsfs
// file keeps it) and returns it, or nil: none is remembered, the latest
// was replaced by a newer namespace with the inode, or events were lost
// since it was last known alive (its end and its inode's reuse by a
// namespace made unseen may be among them).
func (l *Lineage) revive(ino uint32) *Namespace {
	for i := len(l.dead) - 1; i >= 0; i-- {
		n := l.dead[i]
		if n.Ino != ino {
			continue
		}
		if n.replaced || n.aliveAt.IsZero() || !l.lostAt.Before(n.aliveAt) {
			return nil
		}
		l.dead = slices.Delete(slices.Clone(l.dead), i, i+1)
		// What its death left: the table kept for holders that had just
		// exited (it is read anew now), the time of its last exit.
		n.Dead, n.Died, n.LastTable, n.lastExit = false, time.Time{}, nil, time.Time{}
		l.live[ino] = n
		l.changes++
		// The creator's exit while it was retired reached it only as
		// exitRetired applies it (its name, and that it is gone): only a
		// creator known by its start time (a reused pid is told apart)
		// is indexed again.
		if !n.creatorGone && n.Creator.PID != 0 && n.Creator.StartTime != 0 {
			l.byCreator[n.Creator.PID] = append(l.byCreator[n.Creator.PID], n)
		}
		return n
	}
	return nil
}

// seenAlive records that n was alive at t.
func (n *Namespace) seenAlive(t time.Time) {
	if t.After(n.aliveAt) {
		n.aliveAt = t
	}
}

// newNamespace returns, for an event that created a mount namespace (an
// unshare, a CLONE_NEWNS child), a process in it and its inode: the
// namespace's birth id is read through that process when the event arrives.
func newNamespace(ev *event.Event) (pid int, ino uint32) {
	switch {
	case ev.Kind == event.KindUnshare && ev.Ret == 0 && ev.MntNSAfter != ev.MntNSBefore:
		return int(ev.PID), ev.MntNSAfter
	case ev.Kind == event.KindNewNSFork:
		return int(ev.ChildPID), ev.ChildMntNS
	}
	return 0, 0
}

// retireBeforeCreation retires what the lineage knows under the inode of
// a namespace ev creates, before anything else is done for ev: the
// process list a pending leak's settle reads now already has ev's
// process in that namespace, and the generation known by that inode
// (whose last process left, its exit handled, and which a scan has not
// retired yet) would adopt it. The same birth id is the same namespace,
// learned from a scan ahead of its creation event: left to created.
func (c *Correlator) retireBeforeCreation(ev *event.Event) {
	_, ino := newNamespace(ev)
	old := c.lineage.Get(ino)
	if ino == 0 || old == nil || (old.ID != 0 && old.ID == ev.NewMntNSID) {
		return
	}
	old.LastTable = c.ledger.Forget(ino)
	old.replaced = true
	c.lineage.retire(old, old.deathTime(ev.Time))
}

// copiesAHolder reports whether ev makes a namespace out of a holder of a
// leak that settles now (its deadline passed): a holder's process that
// unshared again, or its CLONE_NEWNS child. Such a creation is applied
// before the leak settles: the process list the settle reads shows the
// process in the new namespace already, which, its creation not applied,
// would be one of unknown origin, and the copy it took of the leak lost
// with the namespace it left.
func (c *Correlator) copiesAHolder(ev *event.Event) bool {
	if _, ino := newNamespace(ev); ino == 0 {
		return false
	}
	from := ev.MntNSBefore
	switch {
	case ev.Kind == event.KindNewNSFork:
		from = ev.ParentMntNS
	case from == 0:
		from = c.lineage.namespaceOf(int(ev.PID), int(ev.PPID))
	}
	for _, p := range c.pending {
		if c.now.Before(p.deadline) {
			continue
		}
		for _, m := range p.matches {
			if m.ns.Ino == from {
				return true
			}
		}
	}
	return false
}
