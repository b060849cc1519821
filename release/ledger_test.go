package release

import (
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
)

// The ledger proves a copy received only for the namespace born with the
// birth id it has now, from an origin's unmount after that birth, with no
// mount by the namespace at that place since.
func TestLedgerReceived(t *testing.T) {
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	made := &event.Event{Kind: event.KindUnshare, Time: at, PID: 40, Comm: "unshare", MntNS: 1, MntNSBefore: 1, MntNSAfter: 9, NewMntNSID: 50, Cmdline: "unshare -m dockerd"}
	restart := &event.Event{Kind: event.KindUnshare, Time: at.Add(3 * time.Second), PID: 50, Comm: "unshare", MntNS: 1, MntNSBefore: 1, MntNSAfter: 10, NewMntNSID: 51, Cmdline: "unshare -m dockerd"}
	remount := &event.Event{Kind: event.KindMount, Time: at.Add(4 * time.Second), PID: 51, Comm: "mount", MntNS: 10, Target: "/srv/vol"}
	other := *remount
	other.Comm = "sh"
	unmount := &event.Event{Kind: event.KindUmount, Time: at.Add(time.Second), PID: 41, Comm: "umount", MntNS: 1, Target: "/srv/vol"}
	own := &event.Event{Kind: event.KindMount, Time: at.Add(2 * time.Second), PID: 42, Comm: "mount", MntNS: 9, Target: "/srv/vol"}
	pivoted := &event.Event{Kind: event.KindMount, Time: at.Add(2 * time.Second), PID: 43, Comm: "runc", MntNS: 9, Target: "/var/lib/x/merged/srv/vol"}
	m := Mount{Point: "/srv/vol"}
	for _, tt := range []struct {
		name    string
		events  []*event.Event
		id      uint64
		verdict string
		gone    bool   // the process that mounted no longer runs in the namespace
		want    string // "" for not proven
	}{
		{"made, then the origin unmounted", []*event.Event{made, unmount}, 50, "", false, "unshare[40] (unshare) made mnt:[9] (id 50)"},
		{"another namespace under the inode", []*event.Event{made, unmount}, 51, "", false, ""},
		{"the unmount before the birth", []*event.Event{unmount, made}, 50, "", false, ""},
		{"the namespace mounted there itself", []*event.Event{made, unmount, own}, 50, "", false, ""},
		{"... into a rootfs it pivots into", []*event.Event{made, unmount, pivoted}, 50, "", false, ""},
		{"no unmount, the verdict stands for it", []*event.Event{made}, 50, "the verdict now: rprivate-bind", false, "the verdict now: rprivate-bind"},
		{"no unmount, no verdict", []*event.Event{made}, 50, "", false, ""},
		{"a runtime restarted into a newer namespace", []*event.Event{made, own, restart, remount}, 50, "", true, "(a restart)"},
		{"restarted, but the mounter still runs there", []*event.Event{made, own, restart, remount}, 50, "", false, ""},
		{"gone, no restart", []*event.Event{made, own}, 50, "", true, ""},
		{"gone, another program mounts in the newer one", []*event.Event{made, own, restart, &other}, 50, "", true, ""},
		{"restarted, another namespace under the inode", []*event.Event{made, own, restart, remount}, 51, "", true, ""},
	} {
		runsIn := func(pid, ino uint32) bool { return !tt.gone }
		got, ok := Ledger{Events: tt.events}.Received(9, tt.id, m, tt.verdict, runsIn)
		if ok != (tt.want != "") || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q %v, want %q", tt.name, got, ok, tt.want)
		}
	}
}

// TestLedgerSaysWhatItLacks: a namespace the ledger has no creation of
// (no birth id asked, or none recorded among other events) is not proven,
// and the refusal says so; a mount the namespace made itself after other
// events is the one the restart is judged by (its program's name).
func TestLedgerSaysWhatItLacks(t *testing.T) {
	at := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
	made := &event.Event{Kind: event.KindUnshare, Time: at, PID: 40, Comm: "unshare", MntNS: 1, MntNSBefore: 1, MntNSAfter: 9, NewMntNSID: 50}
	unmount := &event.Event{Kind: event.KindUmount, Time: at.Add(time.Second), PID: 41, Comm: "umount", MntNS: 1, Target: "/srv/vol"}
	own := &event.Event{Kind: event.KindMount, Time: at.Add(2 * time.Second), PID: 42, Comm: "mount", MntNS: 9, Target: "/srv/vol"}
	restart := &event.Event{Kind: event.KindUnshare, Time: at.Add(3 * time.Second), PID: 50, Comm: "unshare", MntNS: 1, MntNSBefore: 1, MntNSAfter: 10, NewMntNSID: 51}
	remount := &event.Event{Kind: event.KindMount, Time: at.Add(4 * time.Second), PID: 51, Comm: "mount", MntNS: 10, Target: "/srv/vol"}
	earlier := &event.Event{Kind: event.KindMount, Time: at.Add(2500 * time.Millisecond), PID: 30, Comm: "mount", MntNS: 10, Target: "/srv/vol"}
	m := Mount{Point: "/srv/vol"}
	gone := func(pid, ino uint32) bool { return false }
	for _, tt := range []struct {
		name   string
		events []*event.Event
		id     uint64
		ok     bool
		want   string
	}{
		{"no birth id", []*event.Event{made, unmount}, 0, false, "the ledger has no creation of mnt:[9] with birth id 0"},
		{"none recorded among others", []*event.Event{unmount, own, remount}, 50, false, "the ledger has no creation of mnt:[9] with birth id 50"},
		{"its own mount after the unmount, then a restart", []*event.Event{made, unmount, own, restart, remount}, 50, true,
			"mount[42] (mount) made it in the namespace unshare[40] (unshare) made"},
		// A mount in an earlier namespace whose inode the newer one got
		// is no mount in the newer one: only what follows its creation.
		{"its own mount, a restart, the newer one's inode mounted in before", []*event.Event{made, own, earlier, restart}, 50, false,
			"the ledger shows the namespace mounted there itself"},
	} {
		got, ok := Ledger{Events: tt.events}.Received(9, tt.id, m, "", gone)
		if ok != tt.ok || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %q %v, want %v and %q", tt.name, got, ok, tt.ok, tt.want)
		}
	}
}

// TestMadeAt: a mount or move_mount put a mount at the copy's mount
// point, or at a path ending with it (a rootfs pivoted into); the root
// "/" only by a mount at "/" itself (every path ends with "/").
func TestMadeAt(t *testing.T) {
	for _, tt := range []struct {
		ev   event.Event
		path string
		want bool
	}{
		{event.Event{Kind: event.KindMount, Target: "/srv/vol"}, "/srv/vol", true},
		{event.Event{Kind: event.KindMount, Target: "/var/lib/x/merged/srv/vol"}, "/srv/vol", true},
		{event.Event{Kind: event.KindMount, Target: "/srv/other"}, "/srv/vol", false},
		{event.Event{Kind: event.KindMount, Target: "/"}, "/", true},
		{event.Event{Kind: event.KindMount, Target: "/srv/vol"}, "/", false},
		{event.Event{Kind: event.KindMoveMount, ToPath: "/srv/vol", Target: "/elsewhere"}, "/srv/vol", true},
		{event.Event{Kind: event.KindUmount, Target: "/srv/vol"}, "/srv/vol", false},
	} {
		if got := madeAt(&tt.ev, tt.path); got != tt.want {
			t.Errorf("madeAt(%s at %q/%q, %q) = %v, want %v", tt.ev.Kind, tt.ev.Target, tt.ev.ToPath, tt.path, got, tt.want)
		}
	}
}
