package correlate

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// TestNotesKeepPeerGroupsAsRead: a kernel note changes a table's peer
// groups and the ledger's index of them by its one mount (applyNote), not
// by counting the table again; after every note of a seeded run of
// attaches and detaches in three namespaces whose mounts share a few
// groups (as member, as slave, forwarding), each table's groups are what
// groupsOf makes of its mounts, and the index is what adding every
// current table to an empty one makes.
func TestNotesKeepPeerGroupsAsRead(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 27))
	tags := func() string {
		switch r.IntN(5) {
		case 0:
			return ""
		case 1:
			return fmt.Sprintf("shared:%d", 1+r.IntN(6))
		case 2:
			return fmt.Sprintf("master:%d", 1+r.IntN(6))
		}
		return fmt.Sprintf("shared:%d master:%d", 1+r.IntN(3), 4+r.IntN(3))
	}
	nextID := 1
	mount := func() *procfs.Mount {
		nextID++
		return procfs.NewMount(nextID, 1, procfs.MountShape{Minor: nextID, Root: "/", Mountpoint: fmt.Sprintf("/m/%d", nextID),
			Optional: tags(), FSType: "tmpfs", Source: "tmpfs", Options: "rw"})
	}
	info := func(m *procfs.Mount) *mountinfo.Info {
		return &mountinfo.Info{ID: m.ID, Parent: m.Parent, Major: m.Major, Minor: m.Minor, Root: m.Root, Mountpoint: m.Mountpoint,
			Optional: m.Optional, FSType: m.FSType, Source: m.Source, Options: m.Options}
	}
	l := NewLedger(16)
	nss := []uint32{10, 20, 30}
	for _, ns := range nss {
		var ms []*procfs.Mount
		for range 20 {
			ms = append(ms, mount())
		}
		l.Store(NewTable(ns, ms, time.Time{}, l.Seq()))
	}
	for i := range 3000 {
		ns := nss[r.IntN(len(nss))]
		ms := l.Table(ns).Mounts
		if r.IntN(2) == 0 && len(ms) > 0 {
			// What a detach note knows (the daemon's watch): no tags.
			m := ms[r.IntN(len(ms))]
			detached := &mountinfo.Info{ID: m.ID, Parent: m.Parent, Major: m.Major, Minor: m.Minor, Mountpoint: m.Mountpoint}
			l.applyNote(event.MountNote{NS: ns, Detach: true, Mount: detached})
		} else {
			l.applyNote(event.MountNote{NS: ns, Mount: info(mount())})
		}
		for _, ns := range nss {
			tb := l.Table(ns)
			if want := groupsOf(tb.Mounts); !reflect.DeepEqual(tb.groups, want) {
				t.Fatalf("note %d: mnt:[%d]'s groups %+v, want %+v (counted again)", i, ns, tb.groups, want)
			}
		}
		want := newGroupIndex()
		for _, ns := range nss {
			want.add(l.Table(ns))
		}
		if !reflect.DeepEqual(l.groups, want) {
			t.Fatalf("note %d: the ledger's index %+v, want %+v (every table added again)", i, l.groups, want)
		}
	}
}
