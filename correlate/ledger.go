package correlate

import (
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// Table is one namespace's mount table as last read from /proc.
type Table struct {
	NS     uint32
	ReadAt time.Time
	Seq    uint64 // ledger change sequence when read
	Mounts []*procfs.Mount
	byID   []int32 // indexes into Mounts, in mount ID order (see indexByID)
	local  uint64  // the namespace's own change count when read (see Ledger.Record)
	noted  bool    // changed by a kernel mount note since read (mountnotes.go)
	kept   bool    // kept true by the kernel's mount notes since read (mountnotes.go)
	hard   uint64  // the ledger's count of changes no note tells, when read
	groups peerGroups
}

// NewTable indexes a mount table.
func NewTable(ns uint32, mounts []*procfs.Mount, at time.Time, seq uint64) *Table {
	return &Table{NS: ns, ReadAt: at, Seq: seq, Mounts: mounts, byID: indexByID(mounts), groups: groupsOf(mounts)}
}

// Ledger holds the mount tables and the recent mount-family events.
type Ledger struct {
	tables   map[uint32]*Table
	last     map[uint32]*Table // the table before the latest one, per namespace
	seq      uint64            // bumped by every mount-changing event that may reach other tables
	local    map[uint32]uint64 // per namespace: its changes that reach no other table
	history  []*event.Event
	maxHist  int
	spare    func() func(*event.Event) bool // what a trim keeps of the oldest events (history.go); nil: nothing
	dirty    map[uint32]time.Time           // namespace -> its last mount activity
	groups   groupIndex                     // peer groups of the current tables (see groupIndex)
	watched  map[uint32]bool                // namespaces whose mount notes the daemon reads (mountnotes.go)
	hard     uint64                         // bumped by every change that may reach other tables and no note tells
	notedOff []notedDetach                  // the latest mounts a note took off a table (mountnotes.go)
	// torn: per namespace whose teardown the notes began telling, its
	// table before that (applyNote); see Lived.
	torn map[uint32]*Table
}

// NewLedger returns a ledger keeping up to maxHistory events (history.go).
func NewLedger(maxHistory int) *Ledger {
	return &Ledger{tables: map[uint32]*Table{}, last: map[uint32]*Table{}, local: map[uint32]uint64{},
		maxHist: maxHistory, dirty: map[uint32]time.Time{}, groups: newGroupIndex(), watched: map[uint32]bool{},
		torn: map[uint32]*Table{}}
}

// Table returns the last table read for a namespace, or nil.
func (l *Ledger) Table(ns uint32) *Table { return l.tables[ns] }

// Lived returns the last table ns showed while processes lived in it: the
// one before its teardown's notes took its mounts off (see applyNote),
// else its table; nil when none was read. It says where a mount made in
// ns lay once ns is gone.
func (l *Ledger) Lived(ns uint32) *Table {
	if t := l.torn[ns]; t != nil {
		return t
	}
	return l.tables[ns]
}

// Previous returns the table read before the latest one, or nil.
func (l *Ledger) Previous(ns uint32) *Table { return l.last[ns] }

// Fresh reports whether ns's table was read after the latest mount change,
// or is kept true since by the kernel's mount notes (keptTrue).
func (l *Ledger) Fresh(ns uint32) bool {
	t := l.tables[ns]
	return t != nil && t.local == l.local[ns] && (t.Seq == l.seq || l.keptTrue(t))
}

// Store records a table just read. The table it replaces becomes the
// previous one when it was read too; one the kernel's notes made
// (applyNote) leaves the previous one the table read before those notes,
// which shows the copies they detached (detachedCopies).
func (l *Ledger) Store(t *Table) {
	t.local, t.hard, t.kept = l.local[t.NS], l.hard, l.watched[t.NS]
	delete(l.torn, t.NS) // read through a process in it: alive
	if old := l.tables[t.NS]; old != nil {
		t.shareWith(old)
		if !old.noted || l.last[t.NS] == nil {
			l.last[t.NS] = old
		}
		l.groups.remove(old)
	}
	l.tables[t.NS] = t
	l.groups.add(t)
}

// Forget drops the tables of a namespace that died and returns the last
// it showed while it lived (Lived; dead namespaces keep it for holders
// that just exited and for where a mount made there lay).
func (l *Ledger) Forget(ns uint32) *Table {
	t := l.Lived(ns)
	if cur := l.tables[ns]; cur != nil {
		l.groups.remove(cur)
	}
	delete(l.torn, ns)
	delete(l.tables, ns)
	delete(l.last, ns)
	delete(l.local, ns)
	delete(l.watched, ns)
	return t
}

// Record appends a mount-family event to the history and marks the tables
// it may have changed stale: the caller's alone when the change cannot
// leave its namespace, those it reaches, those in a peer group (a table
// that is in none receives nothing), or every table (reach.go).
func (l *Ledger) Record(ev *event.Event) {
	if ev.Ret >= 0 {
		noted := notedKind(ev)
		if own, ok := ownOnly(ev); ok {
			if own != 0 {
				l.touch(own, false)
			}
		} else if l.contained(ev) {
			l.touch(ev.MntNS, noted)
		} else if others, ok := l.reach(ev); ok {
			// Only the namespaces its parent's peer group reaches.
			l.touch(ev.MntNS, noted)
			for _, ns := range others {
				l.touch(ns, noted)
			}
		} else if throughPropagation(ev) {
			// Its own table, and those that propagation can reach.
			l.touch(ev.MntNS, noted)
			for ns, t := range l.tables {
				if ns != ev.MntNS && t.receives() {
					l.touch(ns, noted)
				}
			}
		} else {
			l.seq++
			if !noted {
				l.hard++
			}
		}
	}
	l.history = append(l.history, ev)
	if len(l.history) > l.maxHist {
		l.trim()
	}
}

// MarkDirty notes mount activity in a namespace at t.
func (l *Ledger) MarkDirty(ns uint32, t time.Time) { l.dirty[ns] = t }

// Settled returns, in order, the namespaces whose last mount activity is
// at least delay before now, and forgets them.
func (l *Ledger) Settled(now time.Time, delay time.Duration) []uint32 {
	var out []uint32
	for ns, t := range l.dirty {
		if now.Sub(t) >= delay {
			out = append(out, ns)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	for _, ns := range out {
		delete(l.dirty, ns)
	}
	return out
}

// Seq is the change sequence number.
func (l *Ledger) Seq() uint64 { return l.seq }

// Invalidate marks every table stale, as after events were lost: each is
// re-read before it is next relied on.
func (l *Ledger) Invalidate() { l.seq++; l.hard++ }

// A busy node has hundreds of namespaces of hundreds of mounts each, and
// the ledger keeps two tables per namespace (the latest and the one
// before). What one mount entry costs is what the daemon's memory scales
// with, so a table indexes its entries by ID in a sorted slice of 4-byte
// positions rather than a map, and a re-read table shares the entries that
// did not change with the table before it.

// indexByID returns the positions of mounts sorted by mount ID.
func indexByID(mounts []*procfs.Mount) []int32 {
	idx := make([]int32, len(mounts))
	for i := range idx {
		idx[i] = int32(i)
	}
	sort.Slice(idx, func(i, j int) bool { return mounts[idx[i]].ID < mounts[idx[j]].ID })
	return idx
}

// mount returns the entry with mount ID id, or nil. With duplicate IDs
// (never in one mountinfo) the last one listed wins, as a map's would.
func (t *Table) mount(id int) *procfs.Mount {
	i := sort.Search(len(t.byID), func(i int) bool { return t.Mounts[t.byID[i]].ID > id })
	if i == 0 || t.Mounts[t.byID[i-1]].ID != id {
		return nil
	}
	return t.Mounts[t.byID[i-1]]
}

// shareWith points t's entries that are unchanged since old (same mount ID,
// same fields) at old's, so the two tables hold one copy of them. Entries
// are never modified once read. The shapes are compared by value: two
// reads make equal shapes at different addresses.
func (t *Table) shareWith(old *Table) {
	for i, m := range t.Mounts {
		if o := old.mount(m.ID); o != nil && o != m && o.Equal(m) {
			t.Mounts[i] = o
		}
	}
}

// readTable reads a namespace's mount table through one of its processes.
func (c *Correlator) readTable(n *Namespace) error {
	var last error = errors.New("no process in " + finding.NSName(n.Ino))
	for m := range n.byAge() {
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

// readThroughMounter reads the table of a namespace none of whose known
// members is left (runc's child made it and exited; the container's
// processes were never seen join it) through the process that made its
// latest mount, else that process's parent (a container's mount(8) exits
// at once, the shell that ran it stays): without it a Bidirectional
// container deleted before the next process scan leaves no table to say
// where its published mounts lay. Only for a mount whose event carried
// its cgroup: a recording made before events did holds no answer to
// these questions, and replays as it did.
func (c *Correlator) readThroughMounter(n *Namespace) {
	hist := c.ledger.History()
	for i := len(hist) - 1; i >= 0; i-- {
		ev := hist[i]
		if ev.MntNS != n.Ino || ev.Kind != event.KindMount || ev.Ret != 0 {
			continue
		}
		if ev.Cgroup == "" {
			return
		}
		for _, pid := range []uint32{ev.PID, ev.PPID} {
			if pid == 0 {
				continue
			}
			if ns, mounts, err := c.proc.Mountinfo(int(pid)); err == nil && ns == n.Ino {
				c.ledger.Store(NewTable(n.Ino, mounts, c.now, c.ledger.Seq()))
				return
			}
		}
		return
	}
}
