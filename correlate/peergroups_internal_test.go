package correlate

import (
	"slices"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// TestReach: a mount under a shared mount stales the tables of its peer
// group's peers and slaves, and of the groups those forward to; nothing
// else. A mount under a private or slave mount stales only its own table.
func TestReach(t *testing.T) {
	tables := map[uint32]string{
		1: "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n2 1 0:5 / /tmp rw - tmpfs tmpfs rw\n",
		2: "10 9 254:0 / / rw master:1 - ext4 /dev/vda rw\n",           // a slave of the host (a systemd service)
		3: "20 19 254:0 / / rw - ext4 /dev/vda rw\n",                   // private (a container)
		4: "30 29 254:0 / / rw shared:5 master:1 - ext4 /dev/vda rw\n", // a slave that shares on (a runtime's node)
		5: "40 39 254:0 / / rw master:5 - ext4 /dev/vda rw\n",          // a slave of that one
	}
	l := NewLedger(100)
	for ns, text := range tables {
		mounts, err := mountsOf(text)
		if err != nil {
			t.Fatal(err)
		}
		l.Store(NewTable(ns, mounts, time.Time{}, l.Seq()))
	}
	tests := []struct {
		name   string
		ev     *event.Event
		want   []uint32
		judged bool
	}{
		{"a mount under the host's shared /", &event.Event{Kind: event.KindMount, MntNS: 1, Target: "/srv/vol"}, []uint32{2, 4, 5}, true},
		{"a mount under the host's private /tmp", &event.Event{Kind: event.KindMount, MntNS: 1, Target: "/tmp/x"}, nil, true},
		{"a mount in a slave namespace", &event.Event{Kind: event.KindMount, MntNS: 2, Target: "/srv/vol"}, nil, true},
		{"a mount in the forwarding namespace", &event.Event{Kind: event.KindMount, MntNS: 4, Target: "/a"}, []uint32{5}, true},
		{"an unmount of /tmp in the host", &event.Event{Kind: event.KindUmount, MntNS: 1, Target: "/tmp"}, []uint32{2, 4, 5}, true},
		{"an unmount of what the table does not show", &event.Event{Kind: event.KindUmount, MntNS: 1, Target: "/nowhere"}, nil, false},
		{"a propagation change", &event.Event{Kind: event.KindMount, MntNS: 1, Target: "/", Flags: unix.MS_PRIVATE}, nil, false},
		{"a namespace without a table", &event.Event{Kind: event.KindMount, MntNS: 9, Target: "/x"}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, judged := l.reach(tt.ev)
			slices.Sort(got)
			if judged != tt.judged || !slices.Equal(got, tt.want) {
				t.Errorf("reach = %v, %v; want %v, %v", got, judged, tt.want, tt.judged)
			}
		})
	}
	// The index follows the tables: without the forwarding namespace's
	// table, group 5 is not reached from the host; a re-read table replaces
	// the groups of the one before.
	l.Forget(4)
	if got, _ := l.reach(tests[0].ev); !slices.Equal(sorted(got), []uint32{2}) {
		t.Errorf("after forgetting table 4: reach = %v, want [2]", got)
	}
	mounts, _ := mountsOf("10 9 254:0 / / rw - ext4 /dev/vda rw\n")
	l.Store(NewTable(2, mounts, time.Time{}, l.Seq())) // now private
	if got, _ := l.reach(tests[0].ev); len(got) != 0 {
		t.Errorf("after table 2 turned private: reach = %v, want none", got)
	}
	// Recorded, the mount under / leaves the private namespace's table
	// fresh and stales the reached ones.
	l = NewLedger(100)
	for ns, text := range tables {
		mounts, _ := mountsOf(text)
		l.Store(NewTable(ns, mounts, time.Time{}, l.Seq()))
	}
	l.Record(&event.Event{Kind: event.KindMount, MntNS: 1, Target: "/srv/vol"})
	for ns, fresh := range map[uint32]bool{1: false, 2: false, 3: true, 4: false, 5: false} {
		if l.Fresh(ns) != fresh {
			t.Errorf("after the mount: table %d fresh = %v, want %v", ns, l.Fresh(ns), fresh)
		}
	}
}

func sorted(xs []uint32) []uint32 {
	slices.Sort(xs)
	return xs
}
