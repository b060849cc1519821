package correlate

import (
	"errors"
	"fmt"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// Options tunes the correlator. Zero values take the defaults.
type Options struct {
	// RetryWindow folds repeats of one failure into one incident
	// (containerd retries an unmount many times). Default 30s.
	RetryWindow time.Duration
	// ExitGrace keeps namespaces whose last process left this long before
	// a failure among the holders. Default 10s.
	ExitGrace time.Duration
	// Retention is how long dead namespaces stay in the lineage. Default 10m.
	Retention time.Duration
	// MaxHistory bounds the mount-family events kept as evidence. Default 16384.
	MaxHistory int
	// SettleDelay: a namespace's mount table is re-read once its mount
	// activity has been quiet this long (in event time), so the ledger
	// knows its copies before an unmount elsewhere, and before the kernel
	// detaches them (unlink of the mountpoint). Default 100ms.
	SettleDelay time.Duration
	// GCInterval is how often (in event time) dead namespaces, stale
	// tables and old keys are collected. Default 30s.
	GCInterval time.Duration
	// MaxDead caps the dead namespaces kept for lineage. Default 4096.
	MaxDead int
	// ScanInterval: a failure or a leak check reuses the process list read
	// within this much event time (exit events keep the known members
	// current); a namespace none of whose known processes is left forces a
	// new read, and so does a holder known only from an event. The
	// collection (GCInterval) reads it too. Default 60s.
	ScanInterval time.Duration
	// LeakSettle: a leak is reported once the teardown has settled, this
	// long (in event time) after the unmount, and only if a copy is still
	// mounted or pinned then: on 6.x kernels the runtime's rmdir/unlink
	// right after the unmount detaches most copies. A failure reports the
	// leaks still pending first. Negative: report at once. Default 2s.
	LeakSettle time.Duration
	// MaxMounts caps the mounts held in mount tables; beyond it the
	// least recently read tables are evicted (and re-read when needed),
	// never those of namespaces holding an open leak. Default 400000.
	MaxMounts int
}

func (o *Options) defaults() {
	if o.RetryWindow == 0 {
		o.RetryWindow = 30 * time.Second
	}
	if o.ExitGrace == 0 {
		o.ExitGrace = 10 * time.Second
	}
	if o.Retention == 0 {
		o.Retention = 10 * time.Minute
	}
	if o.MaxHistory == 0 {
		o.MaxHistory = 16384
	}
	if o.SettleDelay == 0 {
		o.SettleDelay = 100 * time.Millisecond
	}
	if o.GCInterval == 0 {
		o.GCInterval = 30 * time.Second
	}
	if o.MaxDead == 0 {
		o.MaxDead = 4096
	}
	if o.LeakSettle == 0 {
		o.LeakSettle = 2 * time.Second
	}
	if o.MaxMounts == 0 {
		o.MaxMounts = 400000
	}
	if o.ScanInterval == 0 {
		o.ScanInterval = time.Minute
	}
}

// Correlator consumes events in order and emits findings. It is not safe
// for concurrent use: one goroutine feeds it.
type Correlator struct {
	proc    procfs.Proc
	opts    Options
	emit    func(*finding.Finding)
	lineage *Lineage
	ledger  *Ledger
	now     time.Time
	hostNS  uint32

	incidents      map[string]time.Time // failure key -> last seen
	leaks          []*leakRecord        // recent leak findings, for linking
	remembered     bool                 // a persistent lineage was applied
	lastRemembered uint64               // kernel time (ns) of its last event
	losses         []loss               // when the kernel dropped events
	lastGC         time.Time            // event time of the last collection
	lastScan       time.Time            // event time of the last process list
	scanned        bool                 // a process list was read since Start
	evicted        uint64               // tables evicted by MaxMounts
	rules          []rule               // the cause table (rules.go), read-only
	pending        []*pendingLeak       // leaks waiting for the teardown to settle
	fuse           fuseServers          // FUSE servers and their exits (rule_dead_fuse_daemon.go)
}

type leakRecord struct {
	id         identity
	holders    map[uint32]bool
	namespaces []*Namespace
	finding    *finding.Finding
}

const maxLeaks = 256

// New returns a correlator reading /proc through proc and handing findings
// to emit.
func New(proc procfs.Proc, opts Options, emit func(*finding.Finding)) *Correlator {
	opts.defaults()
	return &Correlator{
		proc: proc, opts: opts, emit: emit,
		lineage:   NewLineage(opts.Retention),
		ledger:    NewLedger(opts.MaxHistory),
		incidents: map[string]time.Time{},
		rules:     causeRules(),
	}
}

// Lineage exposes the namespace lineage (read-only use).
func (c *Correlator) Lineage() *Lineage { return c.lineage }

// Ledger exposes the mount ledger (read-only use).
func (c *Correlator) Ledger() *Ledger { return c.ledger }

// HostNS is the node's mount namespace, as Start read it.
func (c *Correlator) HostNS() uint32 { return c.hostNS }

// lineageEvent applies a namespace creation or join and reports whether ev
// was one. A live creation also reads the parent's mount table (what the
// new namespace copied); a remembered one only enters the lineage.
func (c *Correlator) lineageEvent(ev *event.Event, live bool) bool {
	create := func(ino, parent uint32, origin Origin, actor Member) {
		if live {
			c.created(ino, parent, origin, actor, ev)
		} else {
			c.lineage.Created(ino, parent, origin, actor, ev)
		}
	}
	if (ev.Kind == event.KindUnshare || ev.Kind == event.KindSetns) && ev.MntNSBefore == 0 && ev.Ret == 0 {
		// The kernel side knows the namespace before only for threads it
		// saw forked; for older ones the lineage knows where the process
		// was (or its parent: a fork inherits the namespace).
		e := *ev
		e.MntNSBefore = c.lineage.namespaceOf(int(ev.PID), int(ev.PPID))
		ev = &e
	}
	switch ev.Kind {
	case event.KindUnshare:
		// A process is in the namespace of its main thread (that is what
		// /proc/PID/ns/mnt shows). Another thread's unshare or setns (a Go
		// program mounting in, or reading, a namespace from a locked OS
		// thread) moves that thread alone, until it ends with no exit
		// event of its own: the namespace is made, the process does not
		// join it nor leave its own.
		// The namespace made by another thread is its thread's (its
		// creator names the tid); the thread is a member of it only when
		// a process list shows it there: it may have ended already.
		if ev.Ret == 0 && ev.MntNSAfter != ev.MntNSBefore {
			actor := memberOf(ev)
			if !mainThread(ev) {
				actor.TID = int(ev.TID)
			}
			create(ev.MntNSAfter, ev.MntNSBefore, OriginUnshare, actor)
			if mainThread(ev) {
				c.lineage.Join(ev.MntNSAfter, ev.MntNSBefore, actor)
			}
		}
		c.ledger.Record(ev)
	case event.KindSetns:
		if ev.Ret == 0 && ev.MntNSAfter != ev.MntNSBefore && mainThread(ev) {
			c.lineage.Join(ev.MntNSAfter, ev.MntNSBefore, memberOf(ev))
		}
	case event.KindNewNSFork:
		create(ev.ChildMntNS, ev.ParentMntNS, OriginClone, memberOf(ev))
		c.lineage.Join(ev.ChildMntNS, 0, Member{PID: int(ev.ChildPID), Comm: ev.Comm, Cgroup: ev.Cgroup, Joined: ev.Time}) // born in its parent's cgroup
		c.ledger.Record(ev)
	default:
		return false
	}
	return true
}

// Start takes the startup snapshot: every process, and one mount table per
// namespace. Namespaces found here predate tracing and are marked inferred.
func (c *Correlator) Start() error {
	procs, err := c.proc.Processes()
	if err != nil {
		return err
	}
	if c.remembered {
		c.forgetReused(procs)
	}
	c.lineage.Seed(procs)
	c.scanned = true // as of the first event (lastScan is set by Handle)
	if c.hostNS, err = c.proc.HostNS(); err != nil {
		return fmt.Errorf("host mount namespace: %w", err)
	}
	c.readTables(c.lineage.Live()) // a namespace whose processes all exited is simply skipped
	return nil
}

// readTable reads a namespace's mount table through one of its processes.
func (c *Correlator) readTable(n *Namespace) error {
	var last error = errors.New("no process in " + finding.NSName(n.Ino))
	for _, m := range n.Members() {
		ns, mounts, err := c.proc.Mountinfo(m.Enter())
		if err == nil && ns != n.Ino {
			err = fmt.Errorf("pid %d is in %s now", m.Enter(), finding.NSName(ns)) // reused, or moved by setns
		}
		if err != nil {
			last = err
			continue
		}
		c.ledger.Store(NewTable(n.Ino, mounts, c.now, c.ledger.Seq()))
		return nil
	}
	return last
}

// refresh re-reads the process list and every stale mount table (or, with
// force, every table only selects), as a failure or a leak check needs the
// present state. It returns what could not be read.
func (c *Correlator) refresh(only func(*Namespace) bool) []string {
	return c.refreshTables(only, false)
}

func (c *Correlator) refreshTables(only func(*Namespace) bool, force bool) []string {
	scanned := false
	if !c.scanned || c.now.Sub(c.lastScan) >= c.opts.ScanInterval {
		if err := c.scan(); err != nil {
			return []string{"process list: " + err.Error()}
		}
		scanned = true
	}
	var missing, retry, todo []*Namespace
	for _, n := range c.lineage.Live() {
		if (c.ledger.Fresh(n.Ino) && !force) || (only != nil && !only(n)) {
			continue
		}
		if n.keptOnly() {
			continue // no process to read it through: the search reads it through its bind
		}
		todo = append(todo, n)
	}
	for _, n := range c.readTables(todo) {
		if scanned {
			missing = append(missing, n)
		} else {
			retry = append(retry, n) // its known processes are gone: who else is there?
		}
	}
	if len(retry) > 0 {
		if err := c.scan(); err != nil {
			return []string{"process list: " + err.Error()}
		}
		for _, n := range retry {
			if c.lineage.Get(n.Ino) == n {
				if err := c.readTable(n); err != nil {
					missing = append(missing, n)
				}
			}
		}
	}
	var out []string
	for _, n := range missing {
		out = append(out, "mount table of "+finding.NSName(n.Ino)+": no process of it could be read")
	}
	return out
}

// Handle consumes one event.
func (c *Correlator) Handle(ev *event.Event) {
	if ev.Time.After(c.now) {
		c.now = ev.Time
	}
	if c.lastScan.IsZero() {
		c.lastScan = c.now // the startup snapshot's list
	}
	c.retireBeforeCreation(ev)
	early := c.copiesAHolder(ev) && c.lineageEvent(ev, true)
	c.settleLeaks(nil, false)
	c.fuse.observe(ev)
	switch {
	case early:
	case c.lineageEvent(ev, true):
	case ev.Kind == event.KindExit:
		c.lineage.Exit(ev.MntNS, int(ev.PID), ev.Comm, ev.Time)
	case ev.Kind == event.KindLost:
		c.lost(ev)
	case mountFamily(ev.Kind):
		if ev.Kind == event.KindUmount && ev.Ret == 0 {
			c.checkLeak(ev) // records ev once it has read what was unmounted
		} else {
			c.ledger.Record(ev)
		}
		if ev.Ret >= 0 {
			c.ledger.MarkDirty(ev.MntNS, ev.Time)
		}
	}
	if isTrigger(ev) {
		c.failure(ev)
	}
	c.settle()
	c.collect()
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

// settle re-reads the tables of namespaces whose mount activity has been
// quiet for SettleDelay. Driven by event time, it happens at the same point
// of the stream live and in a replay.
func (c *Correlator) settle() {
	for _, ns := range c.ledger.Settled(c.now, c.opts.SettleDelay) {
		if n := c.lineage.Get(ns); n != nil && !c.ledger.Fresh(ns) {
			if c.readTable(n) != nil {
				c.readThroughMounter(n)
			}
		}
	}
}

// created records a namespace creation and reads its parent's mount table:
// that is what the new namespace copied.
func (c *Correlator) created(ino, parent uint32, origin Origin, actor Member, ev *event.Event) {
	if old := c.lineage.Get(ino); old != nil {
		old.LastTable = c.ledger.Forget(ino) // an earlier generation, gone unseen
	}
	c.lineage.Created(ino, parent, origin, actor, ev)
	if p := c.lineage.Get(parent); p != nil && !c.ledger.Fresh(parent) {
		_ = c.readTable(p)
	}
	c.ledger.MarkDirty(ino, ev.Time)
}

// mainThread reports whether ev comes from its process's main thread (tid
// == pid; a tid of 0 is not known, taken as the main thread's).
func mainThread(ev *event.Event) bool { return ev.TID == 0 || ev.TID == ev.PID }

func memberOf(ev *event.Event) Member {
	return Member{PID: int(ev.PID), Comm: ev.Comm, Cgroup: ev.Cgroup, Joined: ev.Time}
}
