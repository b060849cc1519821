package correlate

import (
	"strconv"
	"strings"

	"github.com/mntleak/mntleak/procfs"
)

// A mount's propagation, as mountinfo's optional fields tag it: the peer
// group it is a member of (shared:N) and the one it receives from
// (master:N). The ledger's index of the groups over its tables is in
// ledger.go (groupIndex).

// peerGroups lists the peer groups a table's mounts are in, as member
// (shared:N) or as slave (master:N), and the onward groups: a mount in
// group X (either way) that is shared:Y forwards X's changes to Y.
type peerGroups struct {
	in      map[int]bool
	forward map[int][]int
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

func anyShared(mounts []*procfs.Mount) bool {
	for _, m := range mounts {
		if IsShared(m) {
			return true
		}
	}
	return false
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
