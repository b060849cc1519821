package correlate

import (
	"github.com/mntleak/mntleak/internal/kmount"
	"github.com/mntleak/mntleak/procfs"
)

// heldOpenNowhere reports whether the kernel itself shows that no
// namespace an open nsfs file alone could keep holds the object, so
// fdMatches need not read every process's open files (on a node with
// thousands of processes that scan is most of what a failure waits for).
// It walks every mount namespace (procfs.KernelNamespaces) and reads, by
// birth id, the table of each that fdMatches would search (no known
// process, not the caller's, not kept by a bind); the object may be in
// one when it is found there as fdMatches finds it, or when any mount of
// one is on the object's device or is an overlay that may use it as a
// layer. False when the kernel cannot be asked (before 6.12, a recording
// made without it): the scan runs as before.
func (c *Correlator) heldOpenNowhere(id identity, caller uint32) bool {
	kn, ok := c.proc.(procfs.KernelNamespaces)
	if !ok {
		return false
	}
	bound := c.keptNamespaces()
	callerTable := c.ledger.Table(caller)
	// A namespace of the last walk that is gone fails its table read:
	// the walk is made again, once.
	for range 2 {
		nss, walked, err := c.kernelNamespaces(kn)
		if err != nil {
			return false
		}
		gone := false
		for _, ns := range nss {
			if n := c.lineage.Get(ns.Ino); (n != nil && len(n.members) > 0) || ns.Ino == caller {
				continue // searched as any other, or the caller's own
			}
			if _, ok := bound[ns.Ino]; ok {
				continue // kept by a bind: keptMatches reads it
			}
			mounts, err := kn.NamespaceTable(ns.ID)
			if err != nil {
				gone = true
				break
			}
			if mayHold(NewTable(ns.Ino, mounts, c.now, c.ledger.Seq()), id, callerTable) {
				return false
			}
		}
		if !gone {
			return true
		}
		c.kernelWalk = nil
		if walked {
			return false
		}
	}
	return false
}

// kernelWalk is a walk of the kernel's mount namespaces, and when it was
// made: the lineage's changes and the losses handled then.
type kernelWalk struct {
	nss     []kmount.Namespace
	changes uint64 // Lineage.changes
	losses  uint64 // Correlator.lossEvents
}

// kernelNamespaces is the kernel's mount namespaces: the last walk's
// (walked false) while a walk made now would list no other, else a new
// walk (on a node of hundreds of namespaces, one ioctl and one close
// each: a fifth of what a failure cost). A walk lists every namespace,
// with a process in it or not (heldOpenNowhere tells them apart by the
// lineage at each failure). Every mount namespace is made by an unshare
// or a CLONE_NEWNS clone, which the lineage applies as a namespace that
// became live (Lineage.changes; the daemon makes none): while none did
// and no event was lost, no namespace was made since the last walk. One
// that is gone since is told by its table read (heldOpenNowhere walks
// again).
func (c *Correlator) kernelNamespaces(kn procfs.KernelNamespaces) (nss []kmount.Namespace, walked bool, err error) {
	if w := c.kernelWalk; w != nil && w.losses == c.lossEvents && w.changes == c.lineage.changes {
		return w.nss, false, nil
	}
	c.kernelWalk = nil
	nss, err = kn.MountNamespaces()
	if err != nil {
		return nil, true, err
	}
	c.kernelWalk = &kernelWalk{nss: nss, changes: c.lineage.changes, losses: c.lossEvents}
	return nss, true, nil
}

// mayHold reports whether table t may hold the object: findIn finds it,
// or a mount is on its device, or an overlay may use it as a layer.
func mayHold(t *Table, id identity, callerTable *Table) bool {
	if len(findIn(t, id, callerTable)) > 0 {
		return true
	}
	for _, m := range t.Mounts {
		if (id.known() && devOf(m) == id.dev) || (id.layers && m.FSType == "overlay") {
			return true
		}
	}
	return false
}

// readTables reads the tables of namespaces nss as readTable does, and
// returns the ones that could not be read. Where the Proc reads many
// tables at once (procfs.TableReader: the startup snapshot and a refresh
// read one per namespace, hundreds on a busy node), each namespace's
// oldest member is read in one batch first; a namespace whose answer is
// not its table is then read by readTable, member by member, as before.
// The tables are stored in the order of nss either way.
func (c *Correlator) readTables(nss []*Namespace) []*Namespace {
	var failed []*Namespace
	tr, ok := c.proc.(procfs.TableReader)
	if !ok || len(nss) < 2 {
		for _, n := range nss {
			if c.readTable(n) != nil {
				failed = append(failed, n)
			}
		}
		return failed
	}
	pids := make([]int, len(nss))
	for i, n := range nss {
		for m := range n.byAge() {
			pids[i] = m.PID
			break
		}
	}
	var batch []int
	for _, pid := range pids {
		if pid != 0 {
			batch = append(batch, pid)
		}
	}
	answers := tr.Mountinfos(batch)
	next := 0
	for i, n := range nss {
		if pids[i] != 0 {
			a := answers[next]
			next++
			if a.Err == nil && a.NS == n.Ino {
				c.ledger.Store(NewTable(n.Ino, a.Mounts, c.now, c.ledger.Seq()))
				continue
			}
		}
		if c.readTable(n) != nil {
			failed = append(failed, n)
		}
	}
	return failed
}
