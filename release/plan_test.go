package release

import (
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/event"
)

// The act re-checks the plan against the namespace's table it reads after
// entering: the same mount id, at the same place, on the same device.
func TestSamePlanned(t *testing.T) {
	mounts := []*mountinfo.Info{{ID: 85, Mountpoint: "/srv/vol", Major: 7, Minor: 0}}
	step := Step{MntNS: 9, MountID: 85, Where: "/srv/vol", Dev: event.MakeDev(7, 0)}
	if err := samePlanned(mounts, step); err != nil {
		t.Errorf("the planned mount: %v", err)
	}
	for _, tt := range []struct {
		name string
		s    Step
		want string
	}{
		{"another id", Step{MntNS: 9, MountID: 86, Where: "/srv/vol"}, "no longer in mnt:[9]"},
		{"moved", Step{MntNS: 9, MountID: 85, Where: "/srv/other"}, "is at /srv/vol now"},
		{"another device", Step{MntNS: 9, MountID: 85, Where: "/srv/vol", Dev: event.MakeDev(7, 1)}, "device 7:0 now"},
	} {
		if err := samePlanned(mounts, tt.s); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want %q", tt.name, err, tt.want)
		}
	}
}
