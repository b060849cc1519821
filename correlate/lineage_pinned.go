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
		// The creator's exit while it was retired reached no one: only a
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
