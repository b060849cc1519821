package correlate

import (
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/event"
)

// A mount or an unmount propagates out of its namespace only through the
// peer group of the mount it happens under: to that group's peers and
// slaves, and on through any of those that are themselves shared (a mount
// tagged "shared:Y master:X" passes what it receives from X on to Y). On a
// node whose / is shared, every container start mounts under it, but only
// the namespaces that hold a mount of that group (the host's peers, the
// slaves systemd services and runtimes make) can change: the others' tables
// stay fresh, and a failure does not re-read them.

// peerGroups lists the peer groups a table's mounts are in, as member
// (shared:N) or as slave (master:N), and the onward groups: a mount in
// group X (either way) that is shared:Y forwards X's changes to Y.
type peerGroups struct {
	in      map[int]bool
	forward map[int][]int
}

func tags(m *mountinfo.Info) (shared, master int) {
	for _, f := range strings.Fields(m.Optional) {
		if v, ok := strings.CutPrefix(f, "shared:"); ok {
			shared, _ = strconv.Atoi(v)
		} else if v, ok := strings.CutPrefix(f, "master:"); ok {
			master, _ = strconv.Atoi(v)
		}
	}
	return shared, master
}

func groupsOf(mounts []*mountinfo.Info) peerGroups {
	g := peerGroups{in: map[int]bool{}, forward: map[int][]int{}}
	for _, m := range mounts {
		shared, master := tags(m)
		if shared != 0 {
			g.in[shared] = true
		}
		if master != 0 {
			g.in[master] = true
			if shared != 0 {
				g.forward[master] = append(g.forward[master], shared)
			}
		}
	}
	return g
}

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
		if x.in[g] == nil {
			x.in[g] = map[uint32]bool{}
		}
		x.in[g][t.NS] = true
	}
	for from, tos := range t.groups.forward {
		if x.forward[from] == nil {
			x.forward[from] = map[int]int{}
		}
		for _, to := range tos {
			x.forward[from][to]++
		}
	}
}

func (x groupIndex) remove(t *Table) {
	for g := range t.groups.in {
		delete(x.in[g], t.NS)
		if len(x.in[g]) == 0 {
			delete(x.in, g)
		}
	}
	for from, tos := range t.groups.forward {
		for _, to := range tos {
			if x.forward[from][to]--; x.forward[from][to] <= 0 {
				delete(x.forward[from], to)
			}
		}
		if len(x.forward[from]) == 0 {
			delete(x.forward, from)
		}
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
	if t == nil || t.Seq != l.seq || t.local != l.local[ev.MntNS] || ev.Target == "" {
		return nil, false
	}
	var parent *mountinfo.Info
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
