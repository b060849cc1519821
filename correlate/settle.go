package correlate

import (
	"maps"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// pendingLeak is a leak found at an unmount, reported once the teardown
// has settled if a copy is still there.
type pendingLeak struct {
	ev       *event.Event // the unmount
	obj      finding.Object
	id       identity
	matches  []match  // the copies found right after the unmount
	missing  []string // what could not be read then
	deadline time.Time
}

// settleLeaks confirms the pending leaks whose teardown has settled (their
// deadline passed, in event time), or all of them (Flush, at the end). A
// failure on the object of a pending leak confirms it at once (failed):
// the failure shows the object is held, and the leak is what explains it.
func (c *Correlator) settleLeaks(failed func(identity) bool, all bool) {
	if len(c.pending) == 0 {
		return
	}
	var keep []*pendingLeak
	var confirmed []*leakRecord
	for _, p := range c.pending {
		switch hit := failed != nil && failed(p.id); {
		case hit || all || !c.now.Before(p.deadline):
			if rec := c.confirmLeak(p, true, hit); rec != nil {
				confirmed = append(confirmed, rec)
			}
		default:
			keep = append(keep, p)
		}
	}
	c.pending = keep
	c.keepLeaks(confirmed)
}

// joinTeardown makes p's teardown settle together: a leak still pending
// from an earlier unmount by the same namespace, whose copies stayed in
// the same holder namespaces, waits until p's deadline too (a teardown
// settles 2 s after its last unmount), so that one pass confirms them all
// and keepLeaks reports them as one finding. Before, an event that came
// between the two deadlines split a pod's teardown in two findings. A
// deadline moves at most one settle window past its own unmount's.
func (c *Correlator) joinTeardown(p *pendingLeak) {
	for _, q := range c.pending {
		if q.ev.MntNS != p.ev.MntNS || !sameHolderNamespaces(q.matches, p.matches) {
			continue
		}
		limit := q.ev.Time.Add(2 * c.opts.LeakSettle)
		if p.deadline.After(q.deadline) && !p.deadline.After(limit) {
			q.deadline = p.deadline
		}
	}
}

// sameHolderNamespaces reports whether two unmounts' copies are in the
// same namespaces.
func sameHolderNamespaces(a, b []match) bool {
	in := func(ms []match) map[uint32]bool {
		set := map[uint32]bool{}
		for _, m := range ms {
			if m.ns != nil {
				set[m.ns.Ino] = true
			}
		}
		return set
	}
	x, y := in(a), in(b)
	if len(x) != len(y) {
		return false
	}
	for ns := range x {
		if !y[ns] {
			return false
		}
	}
	return true
}

// keepLeaks reports the leaks confirmed together, one finding per
// teardown and holder: the leaks one namespace's unmounts left in the same
// holder namespaces (a pod's rootfs, shm, netns, volumes) are one finding
// that names every object it keeps (Finding.Others). Each object still
// has its record, so a failure on any of them links to that finding.
//
// The finding leads with the object the user cares about (objectRank): a
// pod's volume, then a container's rootfs, then the runtime's own (the
// sandbox's shm, a netns file), whatever order the unmounts came in.
func (c *Correlator) keepLeaks(recs []*leakRecord) {
	done := make([]bool, len(recs))
	for i, rec := range recs {
		if done[i] {
			continue
		}
		group := []*leakRecord{rec}
		for j := i + 1; j < len(recs); j++ {
			if other := recs[j]; !done[j] && sameTeardown(rec, other) {
				done[j] = true
				group = append(group, other)
			}
		}
		lead := 0
		for k, r := range group {
			if objectRank(r.finding.Object.Path) < objectRank(group[lead].finding.Object.Path) {
				lead = k
			}
		}
		group[0], group[lead] = group[lead], group[0]
		rest := group[1:]
		sort.SliceStable(rest, func(a, b int) bool {
			return objectRank(rest[a].finding.Object.Path) < objectRank(rest[b].finding.Object.Path)
		})
		f := group[0].finding
		for _, other := range rest {
			f.Others = append(f.Others, other.finding.Object)
			other.finding = f
			c.leaks = append(c.leaks, other)
		}
		c.keepLeak(group[0])
	}
}

// objectRank orders the objects of one teardown as the user cares about
// them: 0 a pod's volume (<kubelet root>/pods/<uid>/volumes/...), 1 any
// other volume, 2 a container's root filesystem (.../rootfs, docker's
// .../merged), 3 the runtime's internals (the sandbox's shm, netns files,
// the runtimes' state directories).
func objectRank(path string) int {
	switch {
	case podVolumePath.MatchString(path):
		return 0
	case strings.HasSuffix(path, "/rootfs") || strings.HasSuffix(path, "/merged"):
		return 2
	case strings.HasSuffix(path, "/shm") || strings.Contains(path, "/netns/") ||
		strings.HasPrefix(path, "/run/containerd/") || strings.HasPrefix(path, "/run/docker/"):
		return 3
	}
	return 1
}

// podVolumePath is a path in a pod's volume, under any kubelet root.
var podVolumePath = regexp.MustCompile(`/pods/[0-9a-f-]{36}/volumes/[^/]+/[^/]+`)

// sameTeardown reports whether two confirmed leaks come from one teardown:
// unmounts in the same namespace whose copies stayed in the same holder
// namespaces.
func sameTeardown(a, b *leakRecord) bool {
	if a.finding.Call.MntNS != b.finding.Call.MntNS || len(a.holders) != len(b.holders) {
		return false
	}
	for ns := range a.holders {
		if !b.holders[ns] {
			return false
		}
	}
	return true
}

// Flush reports the leaks still waiting for their teardown to settle, as
// they stand now: call it when the events end (the daemon stops, a replay
// reaches the end of its recording).
func (c *Correlator) Flush() { c.settleLeaks(nil, true) }

// sameObject reports whether two identities are the same object (as a
// failure and an earlier leak are matched).
func sameObject(a, b identity) bool {
	return (a.known() && b.dev == a.dev && (a.block || b.root == a.root)) || (a.path != "" && b.path == a.path)
}

// confirmLeak builds the finding of a pending leak as it stands now, if it
// still holds (nil if not):
// the holder namespaces' tables are read again (reread; a leak reported at
// once has just read them), and a copy counts when it is still mounted, or
// when the kernel detached it and a process still keeps it busy. The
// finding is built then, with the processes that pin each copy, so the
// process it names (holder_pid) is the one whose cwd, root, file or mapping
// lies in the copy, and a namespace member only when nothing pins it.
// With failed (a failure hit the object), a leak whose holders are all gone
// by now is reported as it was found: the copy stayed, and it is what the
// failure's processes reached the object through.
func (c *Correlator) confirmLeak(p *pendingLeak, reread, failed bool) *leakRecord {
	holders := map[uint32]bool{}
	for _, m := range p.matches {
		holders[m.ns.Ino] = true
	}
	c.addCopiedSince(p, holders)
	missing := append([]string(nil), p.missing...)
	if reread {
		missing = append(missing, c.refreshTables(func(n *Namespace) bool { return holders[n.Ino] }, true)...)
		c.rereadCompared(p)
	}
	var still []match
	for _, m := range c.search(p.id, p.ev.MntNS, 0) {
		if !m.self && m.exited.IsZero() && holders[m.ns.Ino] {
			still = append(still, m)
		}
	}
	if !reread {
		still = append(still, detachedOnly(p.matches)...)
	}
	still = append(still, c.mountedElsewhere(p, still)...)
	found, pinErr := c.pinsFor(p.id, still, 0)
	pins := map[uint32][]finding.PinRef{}
	for ns, refs := range found {
		if holders[ns] {
			pins[ns] = refs
		}
	}
	// A copy the kernel detached is still a leak while a process keeps it
	// busy: it is named as detached, with that process.
	for _, m := range p.matches {
		if !hasMatchIn(still, m.ns.Ino) && len(pins[m.ns.Ino]) > 0 {
			m.detached = true
			still = append(still, m)
		}
	}
	elsewhere := c.pinsOfCopiesInNoTable(p, found, holders, still)
	for ns, refs := range elsewhere {
		pins[ns] = refs
	}
	if len(still) == 0 && (failed || len(elsewhere) > 0) {
		for _, m := range p.matches {
			if m.ns.Dead {
				m.exited = m.ns.Died // its pids may be other programs' now
			}
			still = append(still, m)
		}
	}
	if len(still) == 0 {
		return nil
	}
	a := &analysis{trigger: p.ev, leak: true, caller: p.ev.MntNS, id: p.id, pins: pins}
	f := c.finding(finding.KindLeak, p.ev, p.obj, a, still)
	f.Missing = append(f.Missing, missing...)
	if pinErr != nil {
		f.Missing = append(f.Missing, "the processes that pin it: "+pinErr.Error())
	}
	rec := &leakRecord{id: p.id, holders: map[uint32]bool{}, finding: f}
	for _, m := range still {
		if !rec.holders[m.ns.Ino] {
			rec.holders[m.ns.Ino] = true
			rec.namespaces = append(rec.namespaces, m.ns)
		}
	}
	return rec
}

// addCopiedSince adds to holders the namespaces made from one of them
// after the unmount (a member's main thread unshared again, a CLONE_NEWNS
// child), and from those, and so on: each copied its parent's table, the
// leaked copy included, so it holds the copy too, and it alone once the
// namespace it left has no process any more.
func (c *Correlator) addCopiedSince(p *pendingLeak, holders map[uint32]bool) {
	live := c.lineage.Live()
	for added := true; added; {
		added = false
		for _, n := range live {
			if !holders[n.Ino] && holders[n.Parent] && n.Created.After(p.ev.Time) {
				holders[n.Ino], added = true, true
			}
		}
	}
}

// rereadCompared reads again, when stale, the tables a leak's holders are
// compared with: the unmounting namespace's (last read before its
// unmount, on a machine where nothing else had it read again before the
// leak settled, it still shows what it unmounted) and the holders'
// parents'. On the stale table, a holder's own bind of its copy to a
// directory of its own looked like a bind of the node's path made before
// tracing began ([cause: rprivate-bind]). One that cannot be read again
// is taken as it was (a recording made before this read has no answer).
func (c *Correlator) rereadCompared(p *pendingLeak) {
	compared := map[uint32]bool{p.ev.MntNS: true}
	for _, m := range p.matches {
		compared[m.ns.Parent] = true
	}
	for _, ino := range slices.Sorted(maps.Keys(compared)) { // in order: a read is a recorded answer
		if n := c.lineage.Get(ino); n != nil && !c.ledger.Fresh(ino) && !n.keptOnly() {
			_ = c.readTable(n)
		}
	}
}

// pinsOfCopiesInNoTable returns the pins, by processes outside the holder
// namespaces, of a copy no mount table shows: a holder's copy is gone from
// its table (detached, or gone with its namespace) and no namespace's table
// has a mount of the device (the object, or another filesystem that got
// its freed number), so a process that still has a file, cwd, root or
// mapping on it (a file opened through /proc/HOLDER/root before the holder
// exited) reaches it through that copy, wherever the process runs. An open
// of the device itself (blockdev-fd) is no copy's.
func (c *Correlator) pinsOfCopiesInNoTable(p *pendingLeak, found map[uint32][]finding.PinRef, holders map[uint32]bool, still []match) map[uint32][]finding.PinRef {
	gone := false
	for _, m := range p.matches {
		gone = gone || !hasMatchIn(still, m.ns.Ino)
	}
	if !gone || p.id.dev == 0 || c.deviceMounted(p.id.dev) {
		return nil
	}
	out := map[uint32][]finding.PinRef{}
	for ns, refs := range found {
		if holders[ns] {
			continue
		}
		for _, r := range refs {
			if r.Pin != string(procfs.PinBlockFD) {
				out[ns] = append(out[ns], r)
			}
		}
	}
	return out
}

// deviceMounted reports whether the latest table of a live namespace has a
// mount of dev. A table read before a mount event since (the unmount that
// made the leak, on a machine where nothing else happened to have it read
// again before the teardown settled) is read again first: a stale one would
// show the filesystem the namespace no longer has. One that cannot be read
// again is taken as it was.
func (c *Correlator) deviceMounted(dev event.Dev) bool {
	tables := c.tables()
	for _, ns := range slices.Sorted(maps.Keys(tables)) { // in order: a read is a recorded answer
		t := tables[ns]
		if !tableHasDev(t, dev) {
			continue
		}
		n := c.lineage.Get(t.NS)
		if c.ledger.Fresh(t.NS) || n == nil || n.keptOnly() || c.readTable(n) != nil {
			return true
		}
		if fresh := c.ledger.Table(t.NS); fresh == nil || tableHasDev(fresh, dev) {
			return true
		}
	}
	return false
}

// tableHasDev reports whether t has a mount of dev.
func tableHasDev(t *Table, dev event.Dev) bool {
	for _, m := range t.Mounts {
		if devOf(m) == dev {
			return true
		}
	}
	return false
}

// detachedOnly returns the matches that are copies the kernel detached
// (seen in the tables read before the unmount, gone from those after).
func detachedOnly(ms []match) []match {
	var out []match
	for _, m := range ms {
		if m.detached {
			out = append(out, m)
		}
	}
	return out
}

// mountedElsewhere finds the filesystem of a pending leak still mounted at
// another path of a holder namespace whose copy at the unmounted path is
// gone (the holder bound the volume to a directory of its own before the
// teardown; the rmdir after the unmount detached the copy at the original
// path, not the filesystem). A leak is the filesystem, judged across every
// mount of it in that namespace: a mount counts when the table the copy
// was found in had it too, with the same id and device, so it is the same
// superblock even on an anonymous device (tmpfs) whose number is reused
// once freed. Only a whole filesystem (root "/") that is not the
// namespace's root device: a bind of one directory shares the device with
// every other directory of it.
func (c *Correlator) mountedElsewhere(p *pendingLeak, still []match) []match {
	if p.id.dev == 0 || (p.id.root != "/" && !p.id.block) {
		return nil
	}
	var out []match
	for _, m := range p.matches {
		fresh := c.ledger.Table(m.ns.Ino)
		if m.table == nil || fresh == nil || m.ns.Dead || hasMatchIn(still, m.ns.Ino) || hasMatchIn(out, m.ns.Ino) {
			continue
		}
		if root := fresh.At("/"); root != nil && devOf(root) == p.id.dev {
			continue
		}
		var same []*mountinfo.Info
		for _, x := range fresh.Mounts {
			if devOf(x) == p.id.dev && x.Mountpoint != "/" && sameMountIn(m.table, x) {
				same = append(same, x)
			}
		}
		for _, x := range outermost(fresh, same) {
			out = append(out, match{ns: m.ns, table: fresh, mount: x, where: x.Mountpoint})
		}
	}
	return out
}

// sameMountIn reports whether t has the mount x (the same id and device).
func sameMountIn(t *Table, x *mountinfo.Info) bool {
	for _, m := range t.Mounts {
		if m.ID == x.ID && devOf(m) == devOf(x) {
			return true
		}
	}
	return false
}
