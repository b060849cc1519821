package release

import (
	"slices"
	"testing"

	"github.com/mntleak/mntleak/finding"
)

// TestMakePins: a process working in the copy (cwd, fd, mapping) makes
// the plan refuse without --force and is detached under with it; one that
// holds the namespace's nsfs file open keeps the namespace, not the copy:
// the plan goes ahead and names it as what keeps running.
func TestMakePins(t *testing.T) {
	pinner := finding.ProcRef{PID: 60, Comm: "pinner"}
	worker := finding.ProcRef{PID: 70, Comm: "worker"}
	nsfd := finding.PinRef{ProcRef: pinner, MntNS: 1, Pin: finding.PinNSFD, Path: "/proc/60/fd/7"}
	cwd := finding.PinRef{ProcRef: worker, MntNS: 9, Pin: "cwd", Path: "/srv/vol"}
	for _, tt := range []struct {
		name     string
		pins     []finding.PinRef
		force    bool
		refused  string
		stays    []int
		stepPins int
	}{
		{"held open only", []finding.PinRef{nsfd}, false, "", []int{60}, 0},
		{"a process works in the copy", []finding.PinRef{nsfd, cwd}, false, "processes work in the copy: worker[70] (cwd /srv/vol)", nil, 0},
		{"forced", []finding.PinRef{nsfd, cwd}, true, "", []int{60}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &finding.Finding{Cause: finding.CauseUnshare, Object: finding.Object{Path: "/dev/loop0"},
				Holders: []finding.Holder{{MntNS: 9, Where: "/srv/vol", MountID: 85, KeptBy: "fd 7 of pinner[60]", Enter: "/proc/60/fd/7", Pins: tt.pins}}}
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
