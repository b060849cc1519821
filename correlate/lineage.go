package correlate

import (
	"cmp"
	"slices"
	"sort"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// Origin is how a mount namespace came to be.
type Origin string

// Origins.
const (
	OriginUnshare  Origin = "unshare"          // unshare(CLONE_NEWNS)
	OriginClone    Origin = "clone"            // a process born with CLONE_NEWNS
	OriginPredates Origin = "predates-tracing" // found in /proc, creation not seen
)

// Member is a process in a namespace. PID and StartTime together identify
// it; StartTime is 0 for a process only seen in events.
type Member struct {
	PID int `json:"pid"`
	// TID is the thread that is the member, when it is not the process's
	// main thread: a thread of its own in another namespace than its
	// process (/proc/PID/task/TID/ns/mnt). 0: the process, by its main
	// thread.
	TID       int       `json:"tid,omitempty"`
	StartTime uint64    `json:"start_time,omitempty"`
	Comm      string    `json:"comm"`
	Cgroup    string    `json:"cgroup,omitempty"`
	Joined    time.Time `json:"joined,omitzero"` // zero: already there when seen
	Left      time.Time `json:"left,omitzero"`
}

// Ref is the member as a finding names it.
func (m *Member) Ref() finding.ProcRef {
	r := procRef(m.PID, m.StartTime, m.Comm, m.Cgroup)
	r.TID = m.TID
	return r
}

// key is what a namespace knows the member by: its thread for a thread
// member, else its pid (tids and pids are one number space).
func (m *Member) key() int {
	if m.TID != 0 {
		return m.TID
	}
	return m.PID
}

// Enter is the pid to enter the member's namespace through (nsenter -t):
// the thread's, for a thread member (/proc/PID/ns/mnt is its main
// thread's, in another namespace).
func (m *Member) Enter() int { return m.key() }

// procRef is a process as findings name it: the container, unit and pod
// come from its cgroup.
func procRef(pid int, start uint64, comm, cgroup string) finding.ProcRef {
	return finding.ProcRef{PID: pid, StartTime: start, Comm: comm, Container: ContainerID(cgroup), Unit: Unit(cgroup), Pod: PodUID(cgroup)}
}

// Namespace is one generation of a mount namespace inode. The kernel reuses
// an inode number once its namespace is gone, so a lineage entry is (inode,
// creation), never the inode alone.
type Namespace struct {
	Ino      uint32
	Origin   Origin
	Created  time.Time    // zero when it predates tracing
	Parent   uint32       // the namespace it was copied from; 0 if unknown
	Creator  Member       // who created it; when inferred, its oldest member
	Event    *event.Event // the unshare or clone event, when seen
	Inferred bool         // creation reconstructed from /proc
	// ID is the id the kernel gave it at birth (NS_GET_MNTNS_ID, from its
	// creation event; 0: unknown): the inode is reused, the id is not.
	ID uint64

	members     map[int]*Member
	past        []Member
	lastExit    time.Time // last exit event seen from inside
	creatorGone bool      // the creator exited: its pid means nothing now
	// pinned: a bind of its nsfs file keeps it alive (seen at the last
	// collection), so it stays live with no process in it.
	pinned bool
	// replaced: retired because a namespace created later has its inode;
	// this generation is gone for good (never revived).
	replaced bool
	// aliveAt is the last time it was known alive (made, entered, a
	// member's exit, a process list showing one, a bind keeping it):
	// events lost after it may hide its end and its inode's reuse.
	aliveAt time.Time
	Dead    bool
	Died    time.Time // when its last member was seen leaving
	// LastTable is the mount table last read before it died, kept so a
	// holder that exited a moment before a failure can still be named.
	LastTable *Table
}

// Members returns the live members, oldest first.
func (n *Namespace) Members() []Member {
	out := make([]Member, 0, len(n.members))
	for _, m := range n.members {
		out = append(out, *m)
	}
	sortMembers(out)
	return out
}

// sortMembers orders members oldest first: start time, then pid.
func sortMembers(ms []Member) {
	slices.SortFunc(ms, func(a, b Member) int {
		return cmp.Or(cmp.Compare(a.StartTime, b.StartTime), cmp.Compare(a.PID, b.PID), cmp.Compare(a.TID, b.TID))
	})
}

// Past returns members that left, in leaving order.
func (n *Namespace) Past() []Member { return append([]Member(nil), n.past...) }

const maxPast = 64

func (n *Namespace) leave(pid int, at time.Time) {
	m, ok := n.members[pid]
	if !ok {
		return
	}
	delete(n.members, pid)
	m.Left = at
	n.past = append(n.past, *m)
	if len(n.past) > maxPast {
		n.past = n.past[len(n.past)-maxPast:]
	}
}

// Lineage is every mount namespace mntleak knows, live and recently dead.
type Lineage struct {
	live      map[uint32]*Namespace
	byCreator map[int][]*Namespace // live namespaces by their creator's pid
	dead      []*Namespace         // retired generations, oldest first
	retention time.Duration
	lostAt    time.Time // the end of the last interval of lost events
}

// NewLineage returns an empty lineage keeping dead namespaces for retention.
func NewLineage(retention time.Duration) *Lineage {
	return &Lineage{live: map[uint32]*Namespace{}, byCreator: map[int][]*Namespace{}, retention: retention}
}

// Get returns the live namespace with inode ino.
func (l *Lineage) Get(ino uint32) *Namespace { return l.live[ino] }

// Live returns the live namespaces, by inode.
func (l *Lineage) Live() []*Namespace {
	out := make([]*Namespace, 0, len(l.live))
	for _, n := range l.live {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Ino < out[j].Ino })
	return out
}

// DiedSince returns the dead namespaces whose last member left at or after t.
func (l *Lineage) DiedSince(t time.Time) []*Namespace {
	var out []*Namespace
	for _, n := range l.dead {
		if !n.Died.Before(t) {
			out = append(out, n)
		}
	}
	return out
}

// LastDead returns the latest dead generation of namespace ino whose last
// member left at or after t, or nil.
func (l *Lineage) LastDead(ino uint32, t time.Time) *Namespace {
	for i := len(l.dead) - 1; i >= 0; i-- {
		if n := l.dead[i]; n.Ino == ino && !n.Died.Before(t) {
			return n
		}
	}
	return nil
}

// Seed records the namespaces and processes of a startup snapshot.
func (l *Lineage) Seed(procs []procfs.Process) {
	l.Reconcile(procs, time.Time{})
}

// Created records a namespace creation seen as an event. A live entry with
// the same inode is an earlier generation that died unseen: it is retired.
func (l *Lineage) Created(ino, parent uint32, origin Origin, creator Member, ev *event.Event) *Namespace {
	at := creator.Joined
	if old := l.live[ino]; old != nil {
		old.replaced = true
		l.retire(old, at)
	}
	n := &Namespace{Ino: ino, Origin: origin, Created: at, Parent: parent, Event: ev, members: map[int]*Member{}}
	if ev != nil {
		n.ID = ev.NewMntNSID
	}
	n.seenAlive(at)
	l.live[ino] = n
	l.setCreator(n, creator)
	return n
}

// setCreator sets a namespace's creator and indexes it by pid, so that
// exits and /proc refreshes reach the namespaces a process created without
// walking every namespace.
func (l *Lineage) setCreator(n *Namespace, m Member) {
	n.Creator = m
	if m.PID != 0 {
		l.byCreator[m.PID] = append(l.byCreator[m.PID], n)
	}
}

// untrack drops a retired namespace from the creator index.
func (l *Lineage) untrack(n *Namespace) {
	list := l.byCreator[n.Creator.PID]
	for i, x := range list {
		if x == n {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(l.byCreator, n.Creator.PID)
	} else {
		l.byCreator[n.Creator.PID] = list
	}
}

// Join adds a member to a namespace, moving it out of the one it was in.
func (l *Lineage) Join(ino, from uint32, m Member) {
	if prev := l.live[from]; prev != nil && from != ino {
		prev.leave(m.PID, m.Joined)
	}
	n := l.live[ino]
	if n == nil {
		n = l.revive(ino)
	}
	if n == nil {
		// Joined a namespace whose creation was never seen.
		n = &Namespace{Ino: ino, Origin: OriginPredates, Inferred: true, members: map[int]*Member{}}
		l.live[ino] = n
		l.setCreator(n, m)
	}
	mm := m
	n.members[m.key()] = &mm
	n.seenAlive(m.Joined)
}

// Exit records the exit of a thread-group leader in namespace ino. Its
// comm at exit is what it ran as (exec changes it after unshare: the
// creator of a MountFlags=slave namespace is "unshare" or "(dockerd)" when
// it unshares and "dockerd" when it exits).
func (l *Lineage) Exit(ino uint32, pid int, comm string, at time.Time) {
	n := l.live[ino]
	if n == nil {
		return
	}
	n.lastExit = at
	n.seenAlive(at)
	var start uint64
	if m := n.members[pid]; m != nil {
		m.Comm, start = comm, m.StartTime
	}
	l.renameCreator(pid, start, comm, "", true)
	n.leave(pid, at)
}

// Verify applies what /proc says of a member of n now: the same process
// (start time) that exec'd takes its new name; a pid that another process
// has now is gone from n (and, if it made n, n's creator is gone).
func (l *Lineage) Verify(n *Namespace, mem Member, comm string, start uint64, at time.Time) {
	key, pid := mem.key(), mem.PID
	m := n.members[key]
	if m == nil || start == 0 {
		return
	}
	if m.StartTime != 0 && m.StartTime != start {
		l.renameCreator(pid, m.StartTime, m.Comm, "", true)
		n.leave(key, at)
		return
	}
	if m.StartTime == 0 {
		m.StartTime = start
	}
	if comm != "" {
		m.Comm = comm
		l.renameCreator(pid, start, comm, "", false)
	}
}

// Gone removes a member /proc says is gone (its exit event still to come).
func (l *Lineage) Gone(n *Namespace, mem Member, at time.Time) {
	if m := n.members[mem.key()]; m != nil {
		l.renameCreator(mem.PID, m.StartTime, m.Comm, "", true)
		n.leave(mem.key(), at)
	}
}

// renameCreator updates the creator's name in the namespaces it created,
// until it exits (after that its pid may belong to someone else).
func (l *Lineage) renameCreator(pid int, start uint64, comm, cgroup string, exited bool) {
	for _, n := range l.byCreator[pid] {
		c := &n.Creator
		if c.PID != pid || n.creatorGone || (c.StartTime != 0 && start != 0 && c.StartTime != start) {
			continue
		}
		c.Comm = comm
		if cgroup != "" {
			c.Cgroup = cgroup
		}
		if c.StartTime == 0 {
			c.StartTime = start
		}
		n.creatorGone = exited
	}
}

// Reconcile brings the lineage in line with a /proc snapshot taken at now
// (zero for the startup snapshot): members appear and disappear, a pid
// reused by another process is told apart by its start time, and
// namespaces without any process are retired.
func (l *Lineage) Reconcile(procs []procfs.Process, now time.Time) {
	// Each namespace's processes by member key: a process by its pid in
	// its main thread's namespace, and by the tid of each of its threads
	// in a namespace of its own (Process.Threads).
	present := map[uint32]map[int]procfs.Process{}
	add := func(ns uint32, key int, p procfs.Process) {
		if present[ns] == nil {
			present[ns] = map[int]procfs.Process{}
		}
		present[ns][key] = p
	}
	for _, p := range procs {
		add(p.MntNS, p.PID, p)
		for _, th := range p.Threads {
			add(th.MntNS, th.TID, p)
		}
	}
	// Retirements and departures are applied in order (inode; start time,
	// pid): they append to the dead list and to past members, which reach
	// findings. Only those are sorted, not every namespace and member.
	var retired []*Namespace
	for _, n := range l.live {
		procsHere := present[n.Ino]
		if len(procsHere) > 0 {
			n.seenAlive(now)
		}
		if len(procsHere) == 0 && n.pinned {
			continue // alive with no process: a bind of its nsfs file keeps it
		}
		if len(procsHere) == 0 {
			retired = append(retired, n)
			continue
		}
		var gone []Member
		for key, m := range n.members {
			p, ok := procsHere[key]
			if !ok || (m.StartTime != 0 && p.StartTime != m.StartTime) {
				gone = append(gone, *m) // gone, or its pid now belongs to another process
				continue
			}
			if m.StartTime == 0 {
				m.StartTime = p.StartTime
			}
			m.Comm = p.Comm // exec changes it; pid and start time stay
			l.renameCreator(m.PID, p.StartTime, p.Comm, p.Cgroup, false)
			if m.Cgroup == "" {
				m.Cgroup = p.Cgroup
			}
		}
		sortMembers(gone)
		for _, m := range gone {
			n.leave(m.key(), now)
		}
	}
	slices.SortFunc(retired, func(a, b *Namespace) int { return cmp.Compare(a.Ino, b.Ino) })
	for _, n := range retired {
		l.retire(n, n.deathTime(now))
	}
	for ino, procsHere := range present {
		n := l.live[ino]
		if n == nil {
			n = l.revive(ino)
		}
		if n == nil {
			n = &Namespace{Ino: ino, Origin: OriginPredates, Inferred: true, members: map[int]*Member{}}
			l.live[ino] = n
		}
		for key, p := range procsHere {
			if _, ok := n.members[key]; !ok {
				m := &Member{PID: p.PID, StartTime: p.StartTime, Comm: p.Comm, Cgroup: p.Cgroup}
				if key != p.PID {
					m.TID = key
				}
				n.members[key] = m
			}
		}
		// A namespace whose creation was not seen is named by its oldest
		// process: the one a remembered join named may be gone since.
		if n.Origin == OriginPredates && (n.Creator.PID == 0 || n.members[n.Creator.key()] == nil) {
			if oldest := n.Members(); len(oldest) > 0 {
				l.untrack(n)
				l.setCreator(n, oldest[0])
			}
		}
	}
	l.expire(now)
}

// left reports whether the process pid (start time start, 0: unknown)
// was a member of n that left it: /proc still lists a process that exited
// until its parent reaps it, and a scan then makes it a member again.
func (n *Namespace) left(pid int, start uint64) bool {
	for _, m := range n.past {
		if m.PID == pid && (m.StartTime == 0 || start == 0 || m.StartTime == start) {
			return true
		}
	}
	return false
}

// deathTime dates the death of n, which a scan at now found with no
// process: its last member's exit when that exit was seen (every member
// left, or came back only as a scan's listing of the exited process
// before its parent reaped it), now when a member it still had is gone
// unseen (killed, and its exit not read yet by a correlator running
// behind the kernel). An exit seen earlier from another process in it (a
// shell's findmnt) does not date it: n still had a member then, and a
// copy, at an unmount since.
func (n *Namespace) deathTime(now time.Time) time.Time {
	if n.lastExit.IsZero() {
		return now
	}
	for _, m := range n.members {
		if !n.left(m.PID, m.StartTime) {
			return now
		}
	}
	return n.lastExit
}

func (l *Lineage) retire(n *Namespace, at time.Time) {
	if l.live[n.Ino] == n {
		delete(l.live, n.Ino)
		l.untrack(n)
	}
	// In Members' order (start time, pid), not the map's: Past() is in
	// findings, and a replay must read the same every time.
	for _, m := range n.Members() {
		n.leave(m.key(), at)
	}
	n.Dead, n.Died = true, at
	l.dead = append(l.dead, n)
}

func (l *Lineage) expire(now time.Time) {
	if now.IsZero() {
		return
	}
	cut := 0
	for cut < len(l.dead) && now.Sub(l.dead[cut].Died) > l.retention {
		cut++
	}
	if cut > 0 {
		l.dead = append([]*Namespace(nil), l.dead[cut:]...)
	}
}

// hasEmpty reports whether a live namespace has no known member left.
func (l *Lineage) hasEmpty() bool {
	for _, n := range l.live {
		if len(n.members) == 0 && !n.pinned {
			return true
		}
	}
	return false
}

// capDead keeps the max most recently dead namespaces.
func (l *Lineage) capDead(max int) {
	if len(l.dead) > max {
		l.dead = append([]*Namespace(nil), l.dead[len(l.dead)-max:]...)
	}
}

// namespaceOf returns the live namespace pid is a member of, else its
// parent's, else 0.
func (l *Lineage) namespaceOf(pid, ppid int) uint32 {
	var parent uint32
	for ino, n := range l.live {
		if _, ok := n.members[pid]; ok {
			return ino
		}
		if _, ok := n.members[ppid]; ok && ppid != 0 {
			parent = ino
		}
	}
	return parent
}

// revive brings back the latest dead generation of namespace ino when the
// namespace is seen alive again (a process entered it, a bind of its nsfs
// file keeps it) and returns it, or nil: none is remembered, the latest
// was replaced by a newer namespace with the inode, or events were lost
// since it was last known alive (its end and its inode's reuse by a
// namespace made unseen may be among them).
func (l *Lineage) revive(ino uint32) *Namespace {
	for i := len(l.dead) - 1; i >= 0; i-- {
		n := l.dead[i]
		if n.Ino != ino {
			continue
		}
		if n.replaced || n.aliveAt.IsZero() || !l.lostAt.Before(n.aliveAt) {
			return nil
		}
		l.dead = slices.Delete(slices.Clone(l.dead), i, i+1)
		// What its death left: the table kept for holders that had just
		// exited (it is read anew now), the time of its last exit.
		n.Dead, n.Died, n.LastTable, n.lastExit = false, time.Time{}, nil, time.Time{}
		l.live[ino] = n
		// The creator's exit while it was retired reached no one: only a
		// creator known by its start time (a reused pid is told apart)
		// is indexed again.
		if !n.creatorGone && n.Creator.PID != 0 && n.Creator.StartTime != 0 {
			l.byCreator[n.Creator.PID] = append(l.byCreator[n.Creator.PID], n)
		}
		return n
	}
	return nil
}

// seenAlive records that n was alive at t.
func (n *Namespace) seenAlive(t time.Time) {
	if t.After(n.aliveAt) {
		n.aliveAt = t
	}
}
