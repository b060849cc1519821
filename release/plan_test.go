package release

import (
	"slices"
	"strings"
	"testing"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/correlate"
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

// TestMakePins: a process working in the copy (cwd, fd, mapping) makes
// the plan refuse without --force and is detached under with it; one that
// holds the namespace's nsfs file open keeps the namespace, not the copy:
// the plan goes ahead and names it as what keeps running.
func TestMakePins(t *testing.T) {
	pinner := correlate.ProcRef{PID: 60, Comm: "pinner"}
	worker := correlate.ProcRef{PID: 70, Comm: "worker"}
	nsfd := correlate.PinRef{ProcRef: pinner, MntNS: 1, Pin: correlate.PinNSFD, Path: "/proc/60/fd/7"}
	cwd := correlate.PinRef{ProcRef: worker, MntNS: 9, Pin: "cwd", Path: "/srv/vol"}
	for _, tt := range []struct {
		name     string
		pins     []correlate.PinRef
		force    bool
		refused  string
		stays    []int
		stepPins int
	}{
		{"held open only", []correlate.PinRef{nsfd}, false, "", []int{60}, 0},
		{"a process works in the copy", []correlate.PinRef{nsfd, cwd}, false, "processes work in the copy: worker[70] (cwd /srv/vol)", nil, 0},
		{"forced", []correlate.PinRef{nsfd, cwd}, true, "", []int{60}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &correlate.Finding{Cause: correlate.CauseUnshare, Object: correlate.Object{Path: "/dev/loop0"},
				Holders: []correlate.Holder{{MntNS: 9, Where: "/srv/vol", MountID: 85, KeptBy: "fd 7 of pinner[60]", Enter: "/proc/60/fd/7", Pins: tt.pins}}}
			p := Make(f, 1, 2, tt.force)
			if tt.refused != "" {
				if len(p.Steps) != 0 || len(p.Refused) != 1 || p.Refused[0].Reason != tt.refused {
					t.Fatalf("plan %+v, want refused: %s", p, tt.refused)
				}
				return
			}
			if len(p.Steps) != 1 || len(p.Refused) != 0 {
				t.Fatalf("plan %+v, want one step", p)
			}
			s := p.Steps[0]
			var stays []int
			for _, r := range s.Stays {
				stays = append(stays, r.PID)
			}
			if s.Enter != "/proc/60/fd/7" || !slices.Equal(stays, tt.stays) || len(s.Pins) != tt.stepPins {
				t.Errorf("step %+v: want entered through /proc/60/fd/7, stays %v, %d pins detached under", s, tt.stays, tt.stepPins)
			}
		})
	}
}
