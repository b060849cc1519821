package correlate

import (
	"slices"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// The history: the mount-family events the ledger keeps as evidence,
// oldest first, at most maxHist of them. Past that, a trim drops the oldest
// quarter at once (so trimming is amortised), except the events its spare
// selects, of which it keeps the newest maxHist/8.
//
// What is spared (sparedEvidence): a propagation change (mount(2) with
// MS_PRIVATE, MS_SLAVE, MS_SHARED or MS_UNBINDABLE, mount_setattr with a
// propagation) and a recursive bind (mount(2) with MS_BIND|MS_REC, or
// open_tree(OPEN_TREE_CLONE|AT_RECURSIVE) and the move_mount that attached
// its tree) made in a namespace still alive, or in the parent of one. Each
// is made once (dockerd makes its root private at its start, runc binds a
// container's /host at its start, days before the leak they cause) and
// cited for as long as the namespaces they shaped live; a mount storm
// elsewhere (kubelet's churn, a test's 3,000 binds a second) would
// otherwise push them out within seconds. Other evidence (a subPath's
// plain bind, a FUSE mount) is not spared: a storm longer than the
// history still pushes it out, and its verdict then says "inferred".

// trim drops the oldest quarter of the history but what spare keeps.
func (l *Ledger) trim() {
	cut := len(l.history) - l.maxHist*3/4
	var kept []*event.Event
	if l.spare != nil {
		keep := l.spare()
		for _, ev := range l.history[:cut] {
			if keep(ev) {
				kept = append(kept, ev)
			}
		}
		// At most an eighth: the history is then at most 7/8 full after a
		// trim, and the next one is maxHist/8 events away.
		if limit := l.maxHist / 8; len(kept) > limit {
			kept = kept[len(kept)-limit:]
		}
	}
	l.history = append(kept, l.history[cut:]...)
}

// DropHistory removes the recorded events drop selects.
func (l *Ledger) DropHistory(drop func(*event.Event) bool) {
	l.history = slices.DeleteFunc(l.history, drop)
}

// History returns the recorded events, oldest first.
func (l *Ledger) History() []*event.Event { return l.history }

// sparedEvidence returns, for one trim (it sees the events in order),
// what the trim spares: a successful propagation change or recursive bind
// made in a live namespace or in the parent of one.
func (c *Correlator) sparedEvidence() func(*event.Event) bool {
	alive := map[uint32]bool{}
	for ino, n := range c.lineage.live { // no order needed: a set
		alive[ino] = true
		if n.Parent != 0 {
			alive[n.Parent] = true
		}
	}
	type clone struct {
		pid   uint32
		mntID int32
	}
	clones := map[clone]bool{} // the spared open_trees, for their move_mount
	return func(ev *event.Event) bool {
		if ev.Ret < 0 || !alive[ev.MntNS] {
			return false
		}
		switch {
		case ev.Kind == event.KindOpenTree && hasFlags(ev, unix.OPEN_TREE_CLONE|unix.AT_RECURSIVE):
			clones[clone{ev.PID, ev.MntID}] = true
			return true
		case ev.Kind == event.KindMoveMount:
			return clones[clone{ev.PID, ev.MntID}]
		}
		return propagationChange(ev) || recursiveBind(ev)
	}
}

// propagationChange: ev changes a mount's propagation.
func propagationChange(ev *event.Event) bool {
	switch ev.Kind {
	case event.KindMount:
		return ev.Flags&(unix.MS_PRIVATE|unix.MS_SLAVE|unix.MS_SHARED|unix.MS_UNBINDABLE) != 0
	case event.KindMountSetattr:
		return ev.Propagation != 0
	}
	return false
}

// recursiveBind: ev is a mount(2) rbind (docker -v /:/host, runc's rootfs).
func recursiveBind(ev *event.Event) bool {
	return ev.Kind == event.KindMount && hasFlags(ev, unix.MS_BIND|unix.MS_REC) && !hasFlags(ev, unix.MS_REMOUNT)
}
