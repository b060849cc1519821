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
