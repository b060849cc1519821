package correlate

import (
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// A tmpfs's device number was given to another when a new filesystem was
// mounted at its path after the leaked one was unmounted there, both
// successful, the unmount being the oldest event known; a failed call, a
// bind, a mount elsewhere or an unmount elsewhere proves nothing, nor a
// mount before the unmount.
func TestReusedDeviceNeedsANewMountAfterTheUnmount(t *testing.T) {
	t0 := time.Date(2026, 11, 21, 12, 0, 0, 0, time.UTC)
	umount := func(s int, target string, ret int64) *event.Event {
		return &event.Event{Kind: event.KindUmount, MntNS: 1, Target: target, Ret: ret, Time: t0.Add(time.Duration(s) * time.Second)}
	}
	mount := func(s int, target string, flags uint64, ret int64) *event.Event {
		return &event.Event{Kind: event.KindMount, MntNS: 1, Target: target, FSType: "tmpfs", Flags: flags, Ret: ret, Time: t0.Add(time.Duration(s) * time.Second)}
	}
	dev := event.MakeDev(0, 50)
	for _, tt := range []struct {
		name string
		hist []*event.Event
		want bool
	}{
		{"unmounted, then mounted again", []*event.Event{umount(1, "/mnt/t", 0), mount(2, "/mnt/t", 0, 0)}, true},
		{"mounted, then unmounted", []*event.Event{mount(1, "/mnt/t", 0, 0), umount(2, "/mnt/t", 0)}, false},
		{"a failed mount after", []*event.Event{umount(1, "/mnt/t", 0), mount(2, "/mnt/t", 0, -16)}, false},
		{"a failed unmount before", []*event.Event{umount(1, "/mnt/t", -16), mount(2, "/mnt/t", 0, 0)}, false},
		{"a bind after", []*event.Event{umount(1, "/mnt/t", 0), mount(2, "/mnt/t", unix.MS_BIND, 0)}, false},
		{"a mount elsewhere after", []*event.Event{umount(1, "/mnt/t", 0), mount(2, "/mnt/u", 0, 0)}, false},
		{"an unmount elsewhere before", []*event.Event{umount(1, "/mnt/u", 0), mount(2, "/mnt/t", 0, 0)}, false},
	} {
		c := New(nil, Options{}, nil)
		for _, ev := range tt.hist {
			c.ledger.Record(ev)
		}
		if got := c.reused(identity{dev: dev, path: "/mnt/t"}, identity{dev: dev, path: "/mnt/t"}); got != tt.want {
			t.Errorf("%s: reused %v, want %v", tt.name, got, tt.want)
		}
	}
}
