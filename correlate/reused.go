package correlate

import (
	"maps"
	"slices"

	"github.com/mntleak/mntleak/procfs"
)

// The kernel gives a freed namespace inode out again at once, and the
// process list is read at the time it is read, ahead of the events the
// correlator has handled: on a busy node it can show a process in "mnt:[N]"
// that is another namespace than the one the lineage knows by N, whose
// creation is an event not read yet. The birth id (NS_GET_MNTNS_ID, never
// reused) tells them apart where the kernel has it.

// retireReplaced retires each namespace of the lineage whose inode the
// process list shows another namespace has now: the namespace it knew is
// gone (it died unseen, or its end is among the events still to read), and
// a dead generation is never revived for the stranger. Only inodes none of
// whose processes is a known member are asked (one ioctl each): a member
// is still in the namespace it joined.
func (c *Correlator) retireReplaced(procs []procfs.Process) {
	byNS := map[uint32][]procfs.Process{}
	for _, p := range procs {
		byNS[p.MntNS] = append(byNS[p.MntNS], p)
	}
	for _, ino := range slices.Sorted(maps.Keys(byNS)) {
		ps := byNS[ino]
		n := c.lineage.Get(ino)
		if n == nil {
			if dead := c.lineage.LastDead(ino, c.now.AddDate(-1, 0, 0)); dead != nil && !dead.replaced {
				if same, known := c.sameBirth(dead, ps); known && !same {
					dead.replaced = true
				}
			}
			continue
		}
		if hasKnownMember(n, ps) {
			continue
		}
		if same, known := c.sameBirth(n, ps); known && !same {
			n.replaced = true
			died := n.lastExit
			if died.IsZero() {
				died = c.now
			}
			c.lineage.retire(n, died)
		}
	}
}

// hasKnownMember reports whether one of ps is a member n knows (the same
// pid and, where both are known, start time).
func hasKnownMember(n *Namespace, ps []procfs.Process) bool {
	for _, p := range ps {
		if m := n.members[p.PID]; m != nil && (m.StartTime == 0 || m.StartTime == p.StartTime) {
			return true
		}
	}
	return false
}

// sameBirth reports whether the namespace under n's inode now is the one
// n remembers, by the birth id read through one of its processes, and
// whether that could be told at all.
func (c *Correlator) sameBirth(n *Namespace, ps []procfs.Process) (same, known bool) {
	if n.ID == 0 {
		return false, false
	}
	for i, p := range ps {
		if i == 3 {
			break
		}
		if ino, id, err := c.proc.MntNSID(p.PID); err == nil && ino == n.Ino && id != 0 {
			return id == n.ID, true
		}
	}
	return false, false
}
