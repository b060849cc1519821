package correlate

import (
	"slices"
	"strings"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
	"golang.org/x/sys/unix"
)

// checkLeak runs on a successful unmount: if a namespace that copied the
// object still has it, the leak has just formed. It reads what was
// unmounted from the caller's table, then records the event, which makes
// every table stale: the copies are judged on tables read after it.
func (c *Correlator) checkLeak(ev *event.Event) {
	callerTable := c.ledger.Table(ev.MntNS)
	noted := c.ledger.takeUnmountNote(ev.MntNS, ev.PID, ev.Target, ev.Time)
	c.ledger.Record(ev)
	if callerTable == nil || ev.Target == "/" {
		return // "/": the old root a runtime drops after pivot_root
	}
	id, obj, ok := c.unmounted(ev, callerTable, noted)
	if !ok {
		// Never seen mounted: no namespace was copied from a table that
		// had it, so no copy can have been taken.
		return
	}
	mounted := c.mountEventFor(identity{path: ev.Target}, ev.Time)
	candidate := c.copyCandidates(ev, mounted)
	any := false
	for _, n := range c.lineage.Live() {
		any = any || candidate(n)
	}
	if !any {
		return
	}
	before, earlier := c.tableSnapshot(true)
	origin := c.copiedFrom(ev.MntNS, mounted)
	missing := c.refresh(func(n *Namespace) bool { return candidate(n) || origin[n.Ino] })
	if c.originKeeps(id, ev.MntNS, origin) {
		return
	}
	held := func() []match {
		var matches []match
		// A namespace found gone at this very unmount (search's grace is
		// 0: its last process exited after the unmount, before the
		// correlator, running behind the kernel, read it) had its copy:
		// the kernel detached it with the namespace. It is kept, for a
		// process elsewhere that still pins that copy (confirm.go,
		// pinsOfCopiesInNoTable); nothing pinning it, the leak settles to
		// nothing.
		for _, mt := range c.search(id, ev.MntNS, 0) {
			if !mt.self && candidate(mt.ns) {
				matches = append(matches, mt)
			}
		}
		matches = append(matches, c.boundElsewhere(id, ev, callerTable, candidate, matches)...)
		return append(matches, c.detachedCopies(id, ev, before, earlier, matches)...)
	}
	matches := held()
	if c.rescanFor(matches) {
		matches = held()
	}
	if len(matches) == 0 {
		return
	}
	p := &pendingLeak{ev: ev, obj: obj, id: id, matches: matches, missing: missing, deadline: ev.Time.Add(c.opts.LeakSettle)}
	if c.opts.LeakSettle > 0 {
		// Reported once the teardown has settled, if the copy is still
		// there (settle.go): the kernel detaches most copies a moment
		// later, when the runtime removes the directory.
		c.joinTeardown(p)
		c.pending = append(c.pending, p)
		return
	}
	if rec := c.confirmLeak(p, false, false); rec != nil {
		c.keepLeak(rec)
	}
}

// copyCandidates tells the namespaces that may hold a copy of what ev
// unmounted (mounted: its mount's event, nil when not seen): not the
// caller's; those that changed their own mounts since the mount (one that
// received it by propagation may have bound or re-marked its copy); those
// made after it.
func (c *Correlator) copyCandidates(ev, mounted *event.Event) func(*Namespace) bool {
	active := map[uint32]bool{}
	if mounted != nil {
		hist := c.ledger.History()
		for i := len(hist) - 1; i >= 0 && hist[i].Time.After(mounted.Time); i-- {
			if hist[i].Ret >= 0 {
				active[hist[i].MntNS] = true
			}
		}
	}
	return func(n *Namespace) bool {
		switch {
		case n.Ino == ev.MntNS:
			return false
		case mounted == nil:
			return true
		case active[n.Ino]:
			return true
		case n.Created.IsZero():
			// Predates this run, so made before any mount this run saw
			// (without the exclusion every unmount of a mount storm would
			// re-read every such table); a mount remembered from an earlier
			// run may be older than it: it was made while mntleak was down.
			return c.remembered && mounted.MonoNS <= c.lastRemembered
		}
		// A namespace made before the mount can only hold it through
		// propagation, which also carries the unmount.
		return n.Created.After(mounted.Time)
	}
}

// boundElsewhere finds an anonymous filesystem (tmpfs: major 0, whose
// number the kernel gives to another once it is freed) at another path of
// a candidate namespace that shows no copy where the object was: the
// namespace bound its copy there from the object's place before the
// unmount, and nothing was mounted on or unmounted from that path since.
// The correlator runs behind the kernel: the rmdir that follows an unmount
// may detach the copy at the object's path before the first read of the
// holder's table, which then shows the filesystem at the bind alone, and
// findIn takes a whole anonymous filesystem only where the object would
// show. The bind was made while the object was mounted (its number was
// the object's then) and the mount there is the same since, so it is the
// object. A loss of events since the bind leaves the place unproved.
func (c *Correlator) boundElsewhere(id identity, ev *event.Event, callerTable *Table, candidate func(*Namespace) bool, found []match) []match {
	if !id.known() || id.block || id.dev.Major() != 0 || id.root != "/" || id.path == "" {
		return nil
	}
	hist := c.ledger.History()
	var binds map[uint32][]int // indexed when a namespace may need it
	var out []match
	for _, n := range c.lineage.Live() {
		t := c.ledger.Table(n.Ino)
		// Only where the device is mounted at all: the history is read
		// for few unmounts (a mount storm's unmount has no such copy).
		if t == nil || n.keptOnly() || !candidate(n) || hasMatchIn(found, n.Ino) || !tableHasDev(t, id.dev) {
			continue
		}
		if binds == nil {
			binds = bindsBefore(hist, ev.Time)
		}
		where := translate(id.path, callerTable, t)
		for _, i := range binds[n.Ino] {
			bind := hist[i]
			if !slices.Contains(where, bind.Source) || touchedSince(hist[i+1:], bind) {
				continue
			}
			if m := t.At(bind.Target); m != nil && devOf(m) == id.dev && !c.lostSince(bind.Time) {
				out = append(out, match{ns: n, table: t, mount: m, where: bind.Target})
			}
		}
	}
	return out
}

// bindsBefore indexes the history's binds made before t by the namespace
// they were made in: one pass, whatever the number of namespaces.
func bindsBefore(hist []*event.Event, t time.Time) map[uint32][]int {
	binds := map[uint32][]int{}
	for i, ev := range hist {
		if ev.Kind == event.KindMount && ev.Ret == 0 && ev.Flags&unix.MS_BIND != 0 && ev.Flags&madeNothing == 0 && ev.Time.Before(t) {
			binds[ev.MntNS] = append(binds[ev.MntNS], i)
		}
	}
	return binds
}

// touchedSince reports whether a mount or unmount in later, in bind's
// namespace, changed what is at bind's target (or moved it away).
func touchedSince(later []*event.Event, bind *event.Event) bool {
	for _, ev := range later {
		if ev.MntNS == bind.MntNS && ev.Ret == 0 && ev.Flags&madeNothing == 0 && mountFamily(ev.Kind) &&
			(ev.Target == bind.Target || ev.Source == bind.Target) {
			return true
		}
	}
	return false
}

// lostSince reports whether the kernel dropped events at or after t.
func (c *Correlator) lostSince(t time.Time) bool {
	for _, l := range c.losses {
		if !l.to.Before(t) {
			return true
		}
	}
	return false
}

// keepLeak reports a leak and remembers it, for the failures it explains.
func (c *Correlator) keepLeak(rec *leakRecord) {
	c.leaks = append(c.leaks, rec)
	c.capLeaks()
	c.report(rec.finding)
}

// changedOwnMounts reports whether namespace ns mounted or unmounted
// anything itself since t.
func (c *Correlator) changedOwnMounts(ns uint32, t time.Time) bool {
	for _, ev := range c.ledger.History() {
		if ev.MntNS == ns && ev.Ret >= 0 && !ev.Time.Before(t) && (ev.Kind == event.KindMount || ev.Kind == event.KindUmount) {
			return true
		}
	}
	return false
}

// tables returns the current table of every live namespace.
func (c *Correlator) tables() map[uint32]*Table {
	current, _ := c.tableSnapshot(false)
	return current
}

// tableSnapshot returns the current table of every live namespace and,
// with previous, the one read before it where there is one.
func (c *Correlator) tableSnapshot(previous bool) (current, earlier map[uint32]*Table) {
	current = map[uint32]*Table{}
	if previous {
		earlier = map[uint32]*Table{}
	}
	for _, n := range c.lineage.Live() {
		if t := c.ledger.Table(n.Ino); t != nil {
			current[n.Ino] = t
		}
		if !previous {
			continue
		}
		if t := c.ledger.Previous(n.Ino); t != nil {
			earlier[n.Ino] = t
		}
	}
	return current, earlier
}

// OpenLeaks counts the leak findings whose holder namespaces are not all
// gone: the leaks still holding something.
func (c *Correlator) OpenLeaks() int {
	n := 0
	for _, rec := range c.leaks {
		for _, ns := range rec.namespaces {
			if !ns.Dead {
				n++
				break
			}
		}
	}
	return n
}

// Namespaces counts the live mount namespaces in the lineage.
func (c *Correlator) Namespaces() int { return len(c.lineage.live) }

// leakFor returns the latest leak finding on the same object held by one
// of the namespaces now holding it.
func (c *Correlator) leakFor(id identity, matches []match) *finding.LeakRef {
	for i := len(c.leaks) - 1; i >= 0; i-- {
		rec := c.leaks[i]
		if !sameObject(id, rec.id) {
			continue
		}
		for _, m := range matches {
			if rec.holders[m.ns.Ino] {
				return &finding.LeakRef{Time: rec.finding.Time, Summary: rec.finding.Summary}
			}
		}
	}
	return nil
}

// unmounted identifies what an unmount removed. The correlator runs a
// little behind the kernel, so the caller's latest table may have been read
// after the unmount already happened: the table before it is tried too,
// then the mount the kernel's note says it detached (noted,
// takeUnmountNote: both tables may be later than the unmount), and a
// block device is recognised from the mount event's source.
func (c *Correlator) unmounted(ev *event.Event, latest *Table, noted *procfs.Mount) (identity, finding.Object, bool) {
	for _, t := range []*Table{latest, c.ledger.Previous(ev.MntNS)} {
		if t == nil {
			continue
		}
		if m := t.At(ev.Target); m != nil {
			return unmountedMount(m, ev.Target)
		}
	}
	if noted != nil {
		return unmountedMount(noted, ev.Target)
	}
	mnt := c.mountEventFor(identity{path: ev.Target}, ev.Time)
	if mnt == nil {
		return identity{}, finding.Object{}, false
	}
	if strings.HasPrefix(mnt.Source, "/dev/") {
		if dev, err := c.proc.BlockDevice(mnt.Source); err == nil {
			return identity{dev: dev, block: true, path: ev.Target, fs: mnt.FSType}, finding.Object{Path: ev.Target, Dev: dev, FSType: mnt.FSType}, true
		}
	}
	return c.unmountedAsCopied(ev, mnt)
}

// unmountedMount is the object an unmount at target took off, m as a
// table showed it.
func unmountedMount(m *procfs.Mount, target string) (identity, finding.Object, bool) {
	return identityOf(m, target), finding.Object{Path: target, Dev: devOf(m), FSType: m.FSType, Root: m.Root}, true
}

// unmountedIn reports whether ns itself unmounted path after t.
func (c *Correlator) unmountedIn(ns uint32, path string, t time.Time) bool {
	for _, ev := range c.ledger.History() {
		if ev.Kind == event.KindUmount && ev.MntNS == ns && ev.Ret == 0 && ev.Target == path && !ev.Time.Before(t) {
			return true
		}
	}
	return false
}

// reused reports whether the filesystem a failure is about (id) is another
// than the one an earlier unmount left copies of (leak), though both show
// the same device number: id's was mounted at its path after leak's was
// unmounted, and the kernel had given the freed anonymous device number
// (tmpfs, overlay: major 0) to the new one. Without both events in the
// history they are taken for the same.
func (c *Correlator) reused(id, leak identity) bool {
	if id.block || id.dev.Major() != 0 || id.path == "" || leak.path == "" {
		return false
	}
	const notNew = unix.MS_BIND | unix.MS_MOVE | madeNothing // no new superblock either
	var made, gone time.Time
	hist := c.ledger.History()
	for i := len(hist) - 1; i >= 0 && (made.IsZero() || gone.IsZero()); i-- {
		switch ev := hist[i]; {
		case ev.Ret != 0:
		case made.IsZero() && ev.Kind == event.KindMount && ev.Target == id.path && ev.Flags&notNew == 0:
			made = ev.Time
		case gone.IsZero() && ev.Kind == event.KindUmount && ev.Target == leak.path:
			gone = ev.Time
		}
	}
	return !made.IsZero() && !gone.IsZero() && made.After(gone)
}
