package release

import (
	"slices"
	"testing"

	"github.com/mntleak/mntleak/finding"
)

// memberHolder is a copy in mnt:[9] at /srv/vol, a member of the
// namespace known, nothing working in the copy.
func memberHolder() finding.Holder {
	return finding.Holder{MntNS: 9, Where: "/srv/vol", MountID: 85, Processes: []finding.ProcRef{{PID: 20, Comm: "agent"}}}
}

// TestMakeActsOnLeaksOnly: release detaches a leaked copy, a copy that
// keeps an unmount busy (busy-copy) and a copy nothing more is known of
// (unknown); a finding that is no leak (the object in use where the
// caller is, a stale bind, an invalid verdict) is refused whole, with the
// finding's own fix as the hint.
func TestMakeActsOnLeaksOnly(t *testing.T) {
	for _, tt := range []struct {
		cause finding.Cause
		acts  bool
	}{
		{finding.CauseUnshare, true},
		{finding.CauseBusyCopy, true},
		{finding.CauseUnknown, true},
		{finding.CauseInUse, false},
		{finding.CauseStaleBind, false},
		{finding.CauseInvalid, false},
	} {
		t.Run(tt.cause.String(), func(t *testing.T) {
			f := &finding.Finding{Cause: tt.cause, Fix: "the finding's fix", Object: finding.Object{Path: "/srv/vol"},
				Holders: []finding.Holder{memberHolder()}}
			p := Make(f, 1, 2, false)
			if tt.acts {
				if len(p.Steps) != 1 || len(p.Refused) != 0 {
					t.Fatalf("plan %+v, want one step", p)
				}
				return
			}
			want := Refusal{Reason: "not a leak (" + tt.cause.String() + ")", Hint: "the finding's fix"}
			if len(p.Steps) != 0 || len(p.Refused) != 1 || p.Refused[0] != want {
				t.Fatalf("plan %+v, want only the refusal %+v", p, want)
			}
		})
	}
}

// TestMakeEntersThroughAMember: a namespace with a member and no nsfs
// bind is entered through that member's /proc/PID/ns/mnt.
func TestMakeEntersThroughAMember(t *testing.T) {
	f := &finding.Finding{Cause: finding.CauseUnshare, Object: finding.Object{Path: "/srv/vol"}, Holders: []finding.Holder{memberHolder()}}
	p := Make(f, 1, 2, false)
	if len(p.Steps) != 1 || p.Steps[0].Enter != "/proc/20/ns/mnt" {
		t.Fatalf("plan %+v, want one step entered through /proc/20/ns/mnt", p)
	}
	if s := p.Steps[0]; s.MntNS != 9 || s.MountID != 85 || s.Where != "/srv/vol" {
		t.Errorf("step %+v, want mount 85 at /srv/vol in mnt:[9]", s)
	}
}

// TestPlanOnly: --mount-id narrows a plan to one copy: its step, the
// refusals about its namespace, and those about the whole finding
// (namespace 0); not another copy of the same namespace, nor the same
// mount id in another namespace.
func TestPlanOnly(t *testing.T) {
	p := Plan{
		Steps: []Step{{MntNS: 9, MountID: 85}, {MntNS: 9, MountID: 86}, {MntNS: 10, MountID: 85}},
		Refused: []Refusal{{MntNS: 9, Reason: "in 9"}, {MntNS: 10, Reason: "in 10"},
			{MntNS: 0, Reason: "the whole finding"}},
	}
	got := p.Only(9, 85)
	if len(got.Steps) != 1 || got.Steps[0].MntNS != 9 || got.Steps[0].MountID != 85 {
		t.Errorf("steps %+v, want only mount 85 of mnt:[9]", got.Steps)
	}
	if !slices.Equal(got.Refused, []Refusal{{MntNS: 9, Reason: "in 9"}, {MntNS: 0, Reason: "the whole finding"}}) {
		t.Errorf("refusals %+v, want those of mnt:[9] and of the whole finding", got.Refused)
	}
}

// A namespace kept by one thread of a process (not its main one) is
// entered through that thread's file: /proc/PID/ns/mnt is the main
// thread's namespace, another one.
func TestMakeEntersThroughTheThread(t *testing.T) {
	h := memberHolder()
	h.Processes[0].TID = 21
	f := &finding.Finding{Cause: finding.CauseUnshare, Object: finding.Object{Path: "/srv/vol"}, Holders: []finding.Holder{h}}
	p := Make(f, 1, 2, false)
	if len(p.Steps) != 1 || p.Steps[0].Enter != "/proc/21/ns/mnt" {
		t.Fatalf("plan %+v, want one step entered through the thread's /proc/21/ns/mnt", p)
	}
}
