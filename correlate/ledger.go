package correlate

import (
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/event"
)

// Table is one namespace's mount table as last read from /proc.
type Table struct {
	NS     uint32
	ReadAt time.Time
	Seq    uint64 // ledger change sequence when read
	Mounts []*mountinfo.Info
	byID   []int32 // indexes into Mounts, in mount ID order (see tableindex.go)
	local  uint64  // the namespace's own change count when read (see Ledger.Record)
	shared bool    // some mount is in a shared peer group
	groups peerGroups
}

// NewTable indexes a mount table.
func NewTable(ns uint32, mounts []*mountinfo.Info, at time.Time, seq uint64) *Table {
	return &Table{NS: ns, ReadAt: at, Seq: seq, Mounts: mounts, byID: indexByID(mounts), shared: anyShared(mounts),
		groups: groupsOf(mounts)}
}

// Root returns the namespace's root mount (its parent is outside the table).
func (t *Table) Root() *mountinfo.Info {
	for _, m := range t.Mounts {
		if t.mount(m.Parent) == nil || m.Parent == m.ID {
			return m
		}
	}
	return nil
}

// At returns the topmost mount whose mount point is p, or nil.
func (t *Table) At(p string) *mountinfo.Info {
	var top *mountinfo.Info
	for _, m := range t.Mounts {
		if m.Mountpoint == p {
			top = m // later entries are mounted over earlier ones
		}
	}
	return top
}

// Containing returns the mount a path lives on: the topmost mount whose
// mount point is p or its nearest ancestor.
func (t *Table) Containing(p string) *mountinfo.Info {
	for {
		if m := t.At(p); m != nil {
			return m
		}
		if p == "/" || p == "." || p == "" {
			return nil
		}
		p = path.Dir(p)
	}
}

// Parent returns m's parent mount, or nil.
func (t *Table) Parent(m *mountinfo.Info) *mountinfo.Info {
	if m.Parent == m.ID {
		return nil
	}
	return t.mount(m.Parent)
}

// Propagation renders a mount's propagation as mountinfo's optional fields
// say it: "shared:N", "master:N", "shared:N master:M", or "private".
func Propagation(m *mountinfo.Info) string {
	var tags []string
	for _, f := range strings.Fields(m.Optional) {
		if strings.HasPrefix(f, "shared:") || strings.HasPrefix(f, "master:") {
			tags = append(tags, f)
		}
	}
	if len(tags) == 0 {
		return "private"
	}
	return strings.Join(tags, " ")
}

// IsPrivate reports whether a mount neither sends nor receives propagation.
func IsPrivate(m *mountinfo.Info) bool { return !IsShared(m) && !IsSlave(m) }

// IsShared reports whether a mount is in a shared peer group (its shared:N
// tag, as a number).
func IsShared(m *mountinfo.Info) bool { shared, _ := tags(m); return shared != 0 }

// IsSlave reports whether a mount receives propagation from a master (its
// master:N tag).
func IsSlave(m *mountinfo.Info) bool { _, master := tags(m); return master != 0 }

// RootPropagation names how a namespace's root mount propagates:
// "shared", "slave" or "private".
func RootPropagation(t *Table) string {
	r := t.Root()
	switch {
	case r == nil:
		return ""
	case IsShared(r):
		return "shared"
	case IsSlave(r):
		return "slave"
	}
	return "private"
}

// devOf returns a mount's device in event.Dev form.
func devOf(m *mountinfo.Info) event.Dev { return event.MakeDev(uint32(m.Major), uint32(m.Minor)) }

// Under reports whether path p is dir or below it.
func Under(p, dir string) bool {
	if dir == "/" {
		return strings.HasPrefix(p, "/")
	}
	return p == dir || strings.HasPrefix(p, dir+"/")
}

// rel returns p relative to dir ("" when equal), assuming Under(p, dir).
func rel(p, dir string) string {
	if dir == "/" {
		return strings.TrimPrefix(p, "/")
	}
	return strings.TrimPrefix(strings.TrimPrefix(p, dir), "/")
}

func join(dir, r string) string {
	if r == "" {
		return dir
	}
	return path.Join(dir, r)
}

// Ledger holds the mount tables and the recent mount-family events.
type Ledger struct {
	tables  map[uint32]*Table
	last    map[uint32]*Table // the table before the latest one, per namespace
	seq     uint64            // bumped by every mount-changing event that may reach other tables
	local   map[uint32]uint64 // per namespace: its changes that reach no other table
	history []*event.Event
	maxHist int
	dirty   map[uint32]time.Time // namespace -> its last mount activity
	groups  groupIndex           // peer groups of the current tables (peergroups.go)
}

// NewLedger returns a ledger keeping up to maxHistory events.
func NewLedger(maxHistory int) *Ledger {
	return &Ledger{tables: map[uint32]*Table{}, last: map[uint32]*Table{}, local: map[uint32]uint64{},
		maxHist: maxHistory, dirty: map[uint32]time.Time{}, groups: newGroupIndex()}
}

// Table returns the last table read for a namespace, or nil.
func (l *Ledger) Table(ns uint32) *Table { return l.tables[ns] }

// Previous returns the table read before the latest one, or nil.
func (l *Ledger) Previous(ns uint32) *Table { return l.last[ns] }

// Fresh reports whether ns's table was read after the latest mount change.
func (l *Ledger) Fresh(ns uint32) bool {
	t := l.tables[ns]
	return t != nil && t.Seq == l.seq && t.local == l.local[ns]
}

// Store records a table just read.
func (l *Ledger) Store(t *Table) {
	t.local = l.local[t.NS]
	if old := l.tables[t.NS]; old != nil {
		t.shareWith(old)
		l.last[t.NS] = old
		l.groups.remove(old)
	}
	l.tables[t.NS] = t
	l.groups.add(t)
}

// Forget drops the tables of a namespace that died (dead namespaces keep
// theirs in the returned value for holders that just exited).
func (l *Ledger) Forget(ns uint32) *Table {
	t := l.tables[ns]
	if t != nil {
		l.groups.remove(t)
	}
	delete(l.tables, ns)
	delete(l.last, ns)
	delete(l.local, ns)
	return t
}

// Record appends a mount-family event to the history and marks every
// table stale: with propagation, a mount anywhere may change any table.
// Only the caller's table goes stale when the change cannot leave its
// namespace (see contained).
func (l *Ledger) Record(ev *event.Event) {
	if ev.Ret >= 0 {
		if l.contained(ev) {
			l.local[ev.MntNS]++
		} else if others, ok := l.reach(ev); ok {
			// Only the namespaces its parent's peer group reaches.
			l.local[ev.MntNS]++
			for _, ns := range others {
				l.local[ns]++
			}
		} else {
			l.seq++
		}
	}
	l.history = append(l.history, ev)
	if len(l.history) > l.maxHist {
		// Drop the oldest quarter at once so trimming is amortised.
		l.history = append([]*event.Event(nil), l.history[len(l.history)-l.maxHist*3/4:]...)
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

// DropHistory removes the recorded events drop selects.
func (l *Ledger) DropHistory(drop func(*event.Event) bool) {
	l.history = slices.DeleteFunc(l.history, drop)
}

// History returns the recorded events, oldest first.
func (l *Ledger) History() []*event.Event { return l.history }

// Seq is the change sequence number.
func (l *Ledger) Seq() uint64 { return l.seq }

// Invalidate marks every table stale, as after events were lost: each is
// re-read before it is next relied on.
func (l *Ledger) Invalidate() { l.seq++ }

// Mounts counts the mounts held in current and previous tables.
func (l *Ledger) Mounts() int {
	n := 0
	for _, t := range l.tables {
		n += len(t.Mounts)
	}
	for _, t := range l.last {
		n += len(t.Mounts)
	}
	return n
}

// namespaces lists the namespaces with a table, in order.
func (l *Ledger) namespaces() []uint32 {
	out := make([]uint32, 0, len(l.tables))
	for ns := range l.tables {
		out = append(out, ns)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// mountEventFor returns the last successful mount that made the object,
// before t when t is set. A propagation change (mount --make-shared) or a
// remount of the path made nothing: it is not that mount.
func (c *Correlator) mountEventFor(id identity, before time.Time) *event.Event {
	hist := c.ledger.History()
	for i := len(hist) - 1; i >= 0; i-- {
		ev := hist[i]
		if ev.Kind != event.KindMount || ev.Ret != 0 || (!before.IsZero() && !ev.Time.Before(before)) ||
			ev.Flags&madeNothing != 0 {
			continue
		}
		if ev.Target == id.path && id.path != "" {
			return ev
		}
	}
	return nil
}
