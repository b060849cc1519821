package correlate

import (
	"sort"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// A busy node has hundreds of namespaces of hundreds of mounts each, and
// the ledger keeps two tables per namespace (the latest and the one
// before). What one mount entry costs is what the daemon's memory scales
// with, so a table indexes its entries by ID in a sorted slice of 4-byte
// positions rather than a map, and a re-read table shares the entries that
// did not change with the table before it.

// indexByID returns the positions of mounts sorted by mount ID.
func indexByID(mounts []*mountinfo.Info) []int32 {
	idx := make([]int32, len(mounts))
	for i := range idx {
		idx[i] = int32(i)
	}
	sort.Slice(idx, func(i, j int) bool { return mounts[idx[i]].ID < mounts[idx[j]].ID })
	return idx
}

// mount returns the entry with mount ID id, or nil. With duplicate IDs
// (never in one mountinfo) the last one listed wins, as a map's would.
func (t *Table) mount(id int) *mountinfo.Info {
	i := sort.Search(len(t.byID), func(i int) bool { return t.Mounts[t.byID[i]].ID > id })
	if i == 0 || t.Mounts[t.byID[i-1]].ID != id {
		return nil
	}
	return t.Mounts[t.byID[i-1]]
}

// shareWith points t's entries that are unchanged since old (same mount ID,
// same fields) at old's, so the two tables hold one copy of them. Entries
// are never modified once read.
func (t *Table) shareWith(old *Table) {
	for i, m := range t.Mounts {
		if o := old.mount(m.ID); o != nil && o != m && *o == *m {
			t.Mounts[i] = o
		}
	}
}

func anyShared(mounts []*mountinfo.Info) bool {
	for _, m := range mounts {
		if IsShared(m) {
			return true
		}
	}
	return false
}

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
// to every change that could have reached it (Seq): propagation into it
// is what could have made a mount there shared since. Anything else
// (propagation changes, moves, remounts, the new mount API, pivot_root,
// namespace creation) marks every table stale, as before.
func (l *Ledger) contained(ev *event.Event) bool {
	if ev.Kind != event.KindMount && ev.Kind != event.KindUmount {
		return false
	}
	if ev.Kind == event.KindMount && ev.Flags&propagationFlags != 0 {
		return false
	}
	t := l.tables[ev.MntNS]
	return t != nil && t.Seq == l.seq && !t.shared
}
