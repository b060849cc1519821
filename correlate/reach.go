package correlate

import (
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// Which tables an event can have changed (Ledger.Record): none but its own
// namespace's (ownOnly, contained), those its parent mount's peer group
// reaches (reach, over the ledger's index of peer groups), those in any
// peer group (throughPropagation), or any.

// propagationFlags are the mount(2) flags that change how mounts propagate
// or move them: their effect on other namespaces is not judged here.
const propagationFlags = unix.MS_REMOUNT | unix.MS_MOVE | unix.MS_SHARED | unix.MS_SLAVE | unix.MS_PRIVATE | unix.MS_UNBINDABLE

// contained reports whether a successful event can only have changed its
// own namespace's table. A mount or unmount propagates to other namespaces
// only through a shared parent mount; in a namespace with no shared mount
// at all (a container's, a service's private namespace, a storm of binds
// in a runtime's scratch namespace) nothing it mounts or unmounts reaches
// another table, and a plain mount or bind there creates no shared mount
// (a bind of a slave is a slave: it receives, it does not send). So such
// an event leaves every other table fresh, and a failure elsewhere does
// not re-read hundreds of them. The namespace's table must be current as
// to every change that could have reached it (Seq, or kept true by the
// kernel's mount notes): propagation into it is what could have made a
// mount there shared since. Anything else but
// what ownOnly knows (propagation changes, moves, remounts, the new mount
// API) marks every table stale.
func (l *Ledger) contained(ev *event.Event) bool {
	if ev.Kind != event.KindMount && ev.Kind != event.KindUmount {
		return false
	}
	if ev.Kind == event.KindMount && ev.Flags&propagationFlags != 0 {
		return false
	}
	t := l.tables[ev.MntNS]
	return t != nil && (t.Seq == l.seq || l.keptTrue(t)) && t.groups.shared == 0
}

// ownOnly reports whether ev can change no table but its own namespace's
// (own; 0: none that exists), whatever propagation the namespaces have: a
// namespace's creation (unshare, clone) copies mounts into the new one
// and changes none that was there (the copies join their originals' peer
// groups, or become their slaves, which no table of the originals shows);
// a pivot_root moves mounts of its own namespace, and the kernel refuses
// it under a shared mount (EINVAL), so nothing of it propagates.
// A bind remount (MS_REMOUNT|MS_BIND) sets the flags of one mount of its
// namespace: nothing propagates.
func ownOnly(ev *event.Event) (own uint32, ok bool) {
	switch ev.Kind {
	case event.KindUnshare, event.KindNewNSFork:
		return 0, true
	case event.KindPivotRoot:
		return ev.MntNS, true
	case event.KindMount:
		if ev.Flags&(unix.MS_REMOUNT|unix.MS_BIND) == unix.MS_REMOUNT|unix.MS_BIND {
			return ev.MntNS, true
		}
	}
	return 0, false
}

// throughPropagation reports whether a successful mount-family event that
// contained and reach could not judge changes other namespaces' tables
// only by propagation: a mount, bind or unmount, a move, a propagation
// change (a mount that leaves its peer group re-masters the group's
// slaves), the new mount API's attach and attribute changes. A table none
// of whose mounts is in a peer group (no shared: or master: tag: it
// receives nothing) cannot have changed then. A superblock remount
// (MS_REMOUNT without MS_BIND) changes the options every namespace shows
// for that filesystem, private or not.
func throughPropagation(ev *event.Event) bool {
	if ev.MntNS == 0 {
		return false
	}
	switch ev.Kind {
	case event.KindMount:
		return ev.Flags&unix.MS_REMOUNT == 0
	case event.KindUmount, event.KindMoveMount, event.KindMountSetattr, event.KindOpenTree, event.KindFsmount:
		return true
	}
	return false
}

// receives reports whether some mount of t is in a peer group, as member
// or slave: what a mount elsewhere can reach.
func (t *Table) receives() bool { return len(t.groups.in) > 0 }

// A mount or an unmount propagates out of its namespace only through the
// peer group of the mount it happens under: to that group's peers and
// slaves, and on through any of those that are themselves shared (a mount
// tagged "shared:Y master:X" passes what it receives from X on to Y). On a
// node whose / is shared, every container start mounts under it, but only
// the namespaces that hold a mount of that group (the host's peers, the
// slaves systemd services and runtimes make) can change: the others' tables
// stay fresh, and a failure does not re-read them.

// groupIndex is the ledger's peer groups over its current tables: which
// namespaces have a mount in each group, and where each group forwards to
// (counted, a forward being declared by as many tables as show it). Kept
// on Store and Forget, it makes reach cost what it reaches, not a walk
// over every table for every mount of a storm.
type groupIndex struct {
	in      map[int]map[uint32]bool
	forward map[int]map[int]int
}

func newGroupIndex() groupIndex {
	return groupIndex{in: map[int]map[uint32]bool{}, forward: map[int]map[int]int{}}
}

func (x groupIndex) add(t *Table) {
	for g := range t.groups.in {
		x.join(g, t.NS)
	}
	for fw, n := range t.groups.forward {
		x.declare(fw, n)
	}
}

func (x groupIndex) remove(t *Table) {
	for g := range t.groups.in {
		x.leave(g, t.NS)
	}
	for fw, n := range t.groups.forward {
		x.declare(fw, -n)
	}
}

// join records that ns has a mount in group g; leave that it has none.
// An index left zero (groupsOf's) takes none.
func (x groupIndex) join(g int, ns uint32) {
	if x.in == nil {
		return
	}
	if x.in[g] == nil {
		x.in[g] = map[uint32]bool{}
	}
	x.in[g][ns] = true
}

func (x groupIndex) leave(g int, ns uint32) {
	if x.in == nil {
		return
	}
	delete(x.in[g], ns)
	if len(x.in[g]) == 0 {
		delete(x.in, g)
	}
}

// declare counts n more declarations of fw (fewer, n < 0).
func (x groupIndex) declare(fw groupForward, n int) {
	if x.forward == nil {
		return
	}
	if x.forward[fw.from] == nil {
		x.forward[fw.from] = map[int]int{}
	}
	if x.forward[fw.from][fw.to] += n; x.forward[fw.from][fw.to] <= 0 {
		delete(x.forward[fw.from], fw.to)
	}
	if len(x.forward[fw.from]) == 0 {
		delete(x.forward, fw.from)
	}
}

// reach returns the namespaces a successful plain mount or unmount can
// have changed besides its own, and whether it could tell: the caller's
// table must be current, the event a plain mount or unmount, and the mount
// it happens under known. A parent that is not shared sends nothing
// (reach is empty).
func (l *Ledger) reach(ev *event.Event) ([]uint32, bool) {
	if ev.Kind != event.KindMount && ev.Kind != event.KindUmount {
		return nil, false
	}
	if ev.Kind == event.KindMount && ev.Flags&propagationFlags != 0 {
		return nil, false
	}
	t := l.tables[ev.MntNS]
	if t == nil || !l.Fresh(ev.MntNS) || ev.Target == "" {
		return nil, false
	}
	var parent *procfs.Mount
	if ev.Kind == event.KindMount {
		parent = t.Containing(ev.Target)
	} else if m := t.At(ev.Target); m != nil {
		parent = t.Parent(m)
	}
	if parent == nil {
		return nil, false
	}
	first, _ := tags(parent)
	if first == 0 {
		return nil, true // private or slave: it receives, it does not send
	}
	groups := map[int]bool{first: true}
	for todo := []int{first}; len(todo) > 0; {
		g := todo[len(todo)-1]
		todo = todo[:len(todo)-1]
		for to := range l.groups.forward[g] {
			if !groups[to] {
				groups[to] = true
				todo = append(todo, to)
			}
		}
	}
	seen := map[uint32]bool{ev.MntNS: true}
	var out []uint32
	for g := range groups {
		for ns := range l.groups.in[g] {
			if !seen[ns] {
				seen[ns] = true
				out = append(out, ns)
			}
		}
	}
	return out, true
}
