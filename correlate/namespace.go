package correlate

import (
	"cmp"
	"iter"
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
	// traced: its creation was an event of this run (Correlator.created),
	// so every thread in it was born into it or entered it under tracing
	// (the tracer's task map has each, Options.Tasks).
	traced bool
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
func sortMembers(ms []Member) { slices.SortFunc(ms, olderFirst) }

func olderFirst(a, b Member) int {
	return cmp.Or(cmp.Compare(a.StartTime, b.StartTime), cmp.Compare(a.PID, b.PID), cmp.Compare(a.TID, b.TID))
}

// oldest returns the k oldest live members but those skip says, in
// Members' order, without sorting the others.
func (n *Namespace) oldest(k int, skip func(Member) bool) []Member {
	out := make([]Member, 0, k+1)
	for _, m := range n.members {
		if skip(*m) {
			continue
		}
		i, _ := slices.BinarySearchFunc(out, *m, olderFirst)
		if i < k {
			out = slices.Insert(out, i, *m)
			if len(out) > k {
				out = out[:k]
			}
		}
	}
	return out
}

// byAge yields the live members in Members' order, the oldest found
// without sorting the others: most callers stop at it (a table read
// through a namespace's oldest process), and the host namespace of a
// busy node has thousands. The rest are sorted only when asked for.
func (n *Namespace) byAge() iter.Seq[Member] {
	return func(yield func(Member) bool) {
		var first *Member
		for _, m := range n.members {
			if first == nil || olderFirst(*m, *first) < 0 {
				first = m
			}
		}
		if first == nil || !yield(*first) {
			return
		}
		seen := *first
		for _, m := range n.Members() {
			if olderFirst(m, seen) != 0 && !yield(m) {
				return
			}
		}
	}
}

// Past returns members that left, in leaving order.
func (n *Namespace) Past() []Member { return append([]Member(nil), n.past...) }

const maxPast = 64

// Lineage is every mount namespace mntleak knows, live and recently dead.
type Lineage struct {
	live      map[uint32]*Namespace
	byCreator map[int][]*Namespace // live namespaces by their creator's pid
	dead      []*Namespace         // retired generations, oldest first
	retention time.Duration
	lostAt    time.Time // the end of the last interval of lost events
	// byPID and moved bound a failure's pin search (pin_bound.go): the
	// namespace each process is a member of by its main thread, and the
	// namespaces a thread of a process moved from or into since the last
	// process list; and what the last list showed besides processes
	// (where the Proc tells it: procfs.ProcessLister): the kernel's
	// threads, by their namespace, and the processes it could not read.
	byPID      map[int]uint32
	moved      map[int][]uint32
	kernel     map[int]uint32
	unreadable map[int]bool
	// changes counts the namespaces that became live or stopped being so
	// (kernelns.go: the kernel's namespace walk is reused until it moves).
	changes uint64
}

// NewLineage returns an empty lineage keeping dead namespaces for retention.
func NewLineage(retention time.Duration) *Lineage {
	return &Lineage{live: map[uint32]*Namespace{}, byCreator: map[int][]*Namespace{}, retention: retention,
		byPID: map[int]uint32{}, moved: map[int][]uint32{}, kernel: map[int]uint32{}, unreadable: map[int]bool{}}
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

// Seed records the namespaces and processes of a startup snapshot.
func (l *Lineage) Seed(procs []procfs.Process) {
	l.Reconcile(procs, time.Time{})
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
