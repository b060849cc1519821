package correlate

import (
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// A daemon restarted with --state-dir applies what an earlier run saw
// (Remember), then takes its startup snapshot (Start), which keeps only the
// history of the namespaces that are still the same ones.

// Remember applies an event recorded by an earlier run (the persistent
// lineage): namespace creations and joins, mount-family events as
// evidence, and the exits of FUSE servers. It reads nothing from /proc and reports nothing. Call it for
// each remembered event, in order, before Start: the snapshot then retires
// what is gone and keeps the creation history of what is still there.
func (c *Correlator) Remember(ev *event.Event) {
	c.remembered = true
	c.lastRemembered = max(c.lastRemembered, ev.MonoNS)
	if ev.Time.After(c.now) {
		c.now = ev.Time
	}
	c.fuse.observe(ev) // a FUSE mount and its server's exit (kept for it)
	if !c.lineageEvent(ev, false) && mountFamily(ev.Kind) {
		c.ledger.Record(ev)
	}
}

// forgetReused drops the remembered history of a namespace whose inode
// now belongs to another one. The kernel reuses a dead namespace's inode at
// once; its creator, events and members are not the new one's. The
// namespace is keyed by its inode and its birth: the id the kernel gave it
// (NS_GET_MNTNS_ID, recorded with its creation event) must be the one the
// namespace under that inode has now. Without an id (an older kernel, a
// creator gone before it was read), the history is dropped when none of
// the namespace's processes is one the history knows (its creator, or a
// process that joined it) and every one of them started after the last
// remembered event, while mntleak was not running. (A namespace whose
// processes all turned over unseen looks the same: it then loses its
// history, and its verdicts say they are inferred, rather than cite a
// creator that may not be its.)
func (c *Correlator) forgetReused(procs []procfs.Process) {
	here := map[uint32][]procfs.Process{}
	for _, p := range procs {
		here[p.MntNS] = append(here[p.MntNS], p)
	}
	for _, n := range c.lineage.Live() {
		ps := here[n.Ino]
		if n.Event == nil || len(ps) == 0 {
			continue
		}
		if same, known := c.sameBirth(n, ps); known {
			if !same {
				c.forgetGeneration(n)
			}
			continue
		}
		reused := true
		for _, p := range ps {
			m, member := n.members[p.PID]
			known := (member && (m.StartTime == 0 || m.StartTime == p.StartTime)) ||
				(n.Creator.PID == p.PID && (n.Creator.StartTime == 0 || n.Creator.StartTime == p.StartTime))
			if known || p.StartTime <= c.lastRemembered/uint64(clockTick) {
				reused = false
				break
			}
		}
		if reused {
			c.forgetGeneration(n)
		}
	}
}

// forgetGeneration retires a remembered namespace whose inode another one
// has now, and drops the remembered events made in it: none of them is
// the new namespace's.
func (c *Correlator) forgetGeneration(n *Namespace) {
	n.replaced = true
	c.lineage.retire(n, c.now)
	c.ledger.DropHistory(func(ev *event.Event) bool { return ev.MntNS == n.Ino && ev.MonoNS <= c.lastRemembered })
}
