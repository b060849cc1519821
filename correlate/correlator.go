package correlate

import (
	"fmt"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
	"golang.org/x/sys/unix"
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
	// Tasks lists the threads the tracer saw born or move between mount
	// namespaces since it began, where they are now, and whether the list
	// is complete (tracer.Tasks). With it a failure's pin search tells the
	// processes that may be in a holder namespace without listing /proc
	// (pin_bound.go). Nil in a replay, and where no tracer runs.
	Tasks func() (tasks []event.Task, complete bool, err error)
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
	lossEvents     uint64               // loss events handled, ever
	kernelWalk     *kernelWalk          // the last walk of the kernel's namespaces (kernelns.go)
	lastGC         time.Time            // event time of the last collection
	lastScan       time.Time            // event time of the last process list
	scanned        bool                 // a process list was read since Start
	lostSinceScan  bool                 // events were lost since the last process list
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
	c := &Correlator{
		proc: proc, opts: opts, emit: emit,
		lineage:   NewLineage(opts.Retention),
		ledger:    NewLedger(opts.MaxHistory),
		incidents: map[string]time.Time{},
		rules:     causeRules(),
	}
	c.ledger.spare = c.sparedEvidence
	return c
}

// Lineage exposes the namespace lineage (read-only use).
func (c *Correlator) Lineage() *Lineage { return c.lineage }

// Ledger exposes the mount ledger (read-only use).
func (c *Correlator) Ledger() *Ledger { return c.ledger }

// HostNS is the node's mount namespace, as Start read it.
func (c *Correlator) HostNS() uint32 { return c.hostNS }

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
	c.dropDetached()
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

// Sources answer what the engine needs of an event that the kernel did
// not give, asked as the event arrives, before it is recorded: by the
// time a finding names them the process may be gone (a failing
// mkfs.ext4, runc's child), the namespace's inode reused, the device
// detached. The daemon answers from /proc and sysfs; a replay asks
// nothing, the record holds the answers.
type Sources interface {
	// Command is a process's executable and command line.
	Command(pid int) (procfs.Command, error)
	// Cgroup is a process's cgroup path (the line of /proc/PID/cgroup
	// that names its container, else the unified or systemd one) and the
	// inode of its mount namespace.
	Cgroup(pid int) (cgroup string, mntNS uint32, err error)
	// BirthID is the id the kernel gave mount namespace ino, read through
	// pid (0 when it cannot be read).
	BirthID(pid int, ino uint32) uint64
	// Teardown sets ev.Teardown when ev is a failing teardown call (rbd
	// unmap, zram, dmsetup) whose device it can name; the error says why
	// a teardown call's device could not be named.
	Teardown(ev *event.Event) error
}

// Prepare is the one step before an event is recorded and handed to
// Handle: it fills in, from src, a failure's (or a namespace creator's)
// executable, the cgroup of the process of an event a finding may name
// (its container and pod, named also once it is gone), the birth id of a namespace just created (the persistent
// lineage keys a namespace by its inode and that id), and the device a
// teardown call named. The event is usable whatever it returns; the
// error names what could not be filled in.
func Prepare(ev *event.Event, src Sources) error {
	if wantsCommand(ev) {
		if cmd, err := src.Command(int(ev.PID)); err == nil {
			ev.Exe = cmd.Exe
			if ev.Cmdline == "" {
				ev.Cmdline = cmd.Cmdline
			}
		}
	}
	if wantsCgroup(ev) {
		ev.Cgroup = cgroupOf(ev, src)
	}
	if pid, ino := newNamespace(ev); ino != 0 {
		ev.NewMntNSID = src.BirthID(pid, ino)
	}
	if err := src.Teardown(ev); err != nil {
		return fmt.Errorf("name the device of %s %s: %w", ev.Syscall, ev.Path, err)
	}
	return nil
}

// wantsCommand reports whether the command of an event's process should
// be captured when the event arrives: the process may be gone by the time
// a finding names it (a failing mkfs.ext4, the unshare of a daemon).
func wantsCommand(ev *event.Event) bool {
	return isTrigger(ev) || ev.Kind == event.KindUnshare || ev.Kind == event.KindNewNSFork
}

// wantsCgroup reports whether the cgroup of an event's process should be
// read when the event arrives: the events whose process a finding may name
// (a failure's caller, a namespace's creator, the process that made a
// mount that leaked or propagated), which may be gone, with its pod, by
// then. A process already gone when its event is read has none.
func wantsCgroup(ev *event.Event) bool {
	return wantsCommand(ev) || (mountFamily(ev.Kind) && ev.Ret == 0)
}

// cgroupOf is the cgroup of an event's process or, when it has exited
// already (mount(8) run by a container's shell exits as soon as its mount
// is made), of its parent while that runs in the same mount namespace (a
// fork inherits the cgroup; a container's init, whose parent is the
// runtime's shim on the node, is not taken for the shim); "" otherwise.
func cgroupOf(ev *event.Event, src Sources) string {
	if cg, _, err := src.Cgroup(int(ev.PID)); err == nil {
		return cg
	}
	if ev.PPID == 0 {
		return ""
	}
	if cg, ns, err := src.Cgroup(int(ev.PPID)); err == nil && ns == ev.MntNS {
		return cg
	}
	return ""
}

// mountFamily reports whether events of kind change mount tables.
func mountFamily(k event.Kind) bool {
	switch k {
	case event.KindMount, event.KindUmount, event.KindPivotRoot, event.KindOpenTree,
		event.KindMoveMount, event.KindFsmount, event.KindMountSetattr:
		return true
	}
	return false
}

// isTrigger reports whether an event is a failure worth explaining.
func isTrigger(ev *event.Event) bool {
	switch ev.Kind {
	case event.KindFailure:
		return failedWith(ev, unix.EBUSY)
	case event.KindUmount:
		return failedWith(ev, unix.EINVAL) || failedWith(ev, unix.EBUSY)
	case event.KindMount, event.KindMoveMount:
		return failedWith(ev, unix.ENOENT) || failedWith(ev, unix.EBUSY)
	}
	return false
}

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
	if (ev.Kind == event.KindUnshare || ev.Kind == event.KindSetns) && ev.Ret == 0 && ev.MntNSAfter != ev.MntNSBefore {
		c.lineage.threadMoved(int(ev.PID), ev.MntNSBefore, ev.MntNSAfter)
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

// created records a namespace creation and reads its parent's mount table:
// that is what the new namespace copied.
func (c *Correlator) created(ino, parent uint32, origin Origin, actor Member, ev *event.Event) {
	if old := c.lineage.Get(ino); old != nil {
		old.LastTable = c.ledger.Forget(ino) // an earlier generation, gone unseen
	}
	c.lineage.Created(ino, parent, origin, actor, ev).traced = true
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
