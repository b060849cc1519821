package correlate

import (
	"strconv"
	"strings"

	"github.com/mntleak/mntleak/procfs"
)

// A mount's propagation, as mountinfo's optional fields tag it: the peer
// group it is a member of (shared:N) and the one it receives from
// (master:N). The ledger's index of the groups over its tables is in
// reach.go (groupIndex); a kernel note changes both by its one mount
// (peerGroups.count, from applyNote in mountnotes.go).

// peerGroups counts, of a table's mounts, those in each peer group, as
// member (shared:N) or as slave (master:N); those that forward a group's
// changes onward (a mount tagged master:X and shared:Y passes X's on to
// Y); and those that are shared. Counts, not sets: a kernel note's mount
// changes them by itself (count), without the table's other mounts.
type peerGroups struct {
	in      map[int]int
	forward map[groupForward]int
	shared  int
}

// groupForward is a forward from one peer group to another.
type groupForward struct{ from, to int }

// count adds m's tags (n = 1) or takes them away (n = -1), and tells the
// ledger's index (x, for table ns) what that changed: a group the table
// now has a mount in, or none any more, and each forward.
func (g *peerGroups) count(m *procfs.Mount, n int, x groupIndex, ns uint32) {
	shared, master := tags(m)
	for _, grp := range [2]int{shared, master} {
		if grp == 0 {
			continue
		}
		g.in[grp] += n
		switch {
		case g.in[grp] <= 0:
			delete(g.in, grp)
			x.leave(grp, ns)
		case g.in[grp] == n:
			x.join(grp, ns)
		}
	}
	if shared != 0 && master != 0 {
		fw := groupForward{master, shared}
		if g.forward[fw] += n; g.forward[fw] <= 0 {
			delete(g.forward, fw)
		}
		x.declare(fw, n)
	}
	if shared != 0 {
		g.shared += n
	}
}

func tags(m *procfs.Mount) (shared, master int) {
	for _, f := range strings.Fields(m.Optional) {
		if v, ok := strings.CutPrefix(f, "shared:"); ok {
			shared, _ = strconv.Atoi(v)
		} else if v, ok := strings.CutPrefix(f, "master:"); ok {
			master, _ = strconv.Atoi(v)
		}
	}
	return shared, master
}

func groupsOf(mounts []*procfs.Mount) peerGroups {
	g := peerGroups{in: map[int]int{}, forward: map[groupForward]int{}}
	for _, m := range mounts {
		g.count(m, 1, groupIndex{}, 0)
	}
	return g
}

// Propagation renders a mount's propagation as mountinfo's optional fields
// say it: "shared:N", "master:N", "shared:N master:M", or "private".
func Propagation(m *procfs.Mount) string {
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
func IsPrivate(m *procfs.Mount) bool { return !IsShared(m) && !IsSlave(m) }

// IsShared reports whether a mount is in a shared peer group (its shared:N
// tag, as a number).
func IsShared(m *procfs.Mount) bool { shared, _ := tags(m); return shared != 0 }

// IsSlave reports whether a mount receives propagation from a master (its
// master:N tag).
func IsSlave(m *procfs.Mount) bool { _, master := tags(m); return master != 0 }

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

// Root returns the namespace's root mount (its parent is outside the table).
func (t *Table) Root() *procfs.Mount {
	for _, m := range t.Mounts {
		if t.mount(m.Parent) == nil || m.Parent == m.ID {
			return m
		}
	}
	return nil
}
