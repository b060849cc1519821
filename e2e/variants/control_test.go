package variants

import (
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"

	"github.com/mntleak/mntleak/finding"
)

// TestControlCheckSeesAFalseLeak: a control's check (control, as every
// control of the matrix runs it) fails when a false leak is reported
// about its objects, also when the correlator reports it only once the
// settle window has passed or it is flushed: the check reads the findings
// after that. A leak is injected into the control's path the way a wrong
// verdict would come: held back, then reported by the flush. Checked
// before the settle (as the controls did), the same cell passes.
func TestControlCheckSeesAFalseLeak(t *testing.T) {
	const dev, vol, ns = "/dev/loop9", "/tmp/cell/vol", 4026532999
	objs := objects{paths: []string{dev, vol}, ns: []uint32{ns}}
	falseLeaks := map[string]*finding.Finding{
		"on the mount point": {Kind: finding.KindLeak, Cause: finding.CauseUnshare, Call: finding.Call{Syscall: "umount2"},
			Object: finding.Object{Path: vol}, Holders: []finding.Holder{{MntNS: 4026532111}}, Fix: "stop it"},
		"on the device": {Kind: finding.KindFailure, Cause: finding.CauseUnknown, Call: finding.Call{Syscall: "openat"},
			Object: finding.Object{Path: dev}, Fix: "look"},
		"naming only the holder namespace": {Kind: finding.KindLeak, Cause: finding.CauseUnshare, Call: finding.Call{Syscall: "umount2"},
			Object: finding.Object{Path: "/elsewhere"}, Holders: []finding.Holder{{MntNS: ns}}, Fix: "stop it"},
		"as one more object of a teardown": {Kind: finding.KindLeak, Cause: finding.CauseUnshare, Call: finding.Call{Syscall: "umount2"},
			Object: finding.Object{Path: "/elsewhere"}, Others: []finding.Object{{Path: vol}}, Fix: "stop it"},
	}
	for name, leak := range falseLeaks {
		t.Run(name, func(t *testing.T) {
			var l *live
			settled := false
			l = &live{
				settleWait: func(testing.TB) { settled = true },
				stop: func() { // the flush reports the pending leak
					if settled {
						l.findings = append(l.findings, leak)
					}
				},
			}
			early := privtest.Record(t, func(tb testing.TB) { noFinding(tb, l.all(), objs) })
			if early.Failed() {
				t.Fatalf("the leak is there before the settle: %v", early.Reports())
			}
			r := privtest.Record(t, func(tb testing.TB) { control(tb, l, objs) })
			if !r.Failed() {
				t.Errorf("the control's check passed with a false leak %s: %s", name, leak.Line())
			}
		})
	}
	t.Run("nothing about the control", func(t *testing.T) {
		other := &finding.Finding{Kind: finding.KindLeak, Cause: finding.CauseUnshare, Call: finding.Call{Syscall: "umount2", MntNS: 4026531840},
			Object: finding.Object{Path: "/tmp/cell/vol2"}, Holders: []finding.Holder{{MntNS: 4026532111}}, Fix: "stop it"}
		l := &live{settleWait: func(testing.TB) {}, findings: []*finding.Finding{other}}
		if r := privtest.Record(t, func(tb testing.TB) { control(tb, l, objs) }); r.Failed() {
			t.Errorf("the control's check fails on a finding about something else: %v", r.Reports())
		}
	})
}
