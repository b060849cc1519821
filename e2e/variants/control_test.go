package variants

import (
	"testing"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
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
	falseLeaks := map[string]*correlate.Finding{
		"on the mount point": {Kind: correlate.KindLeak, Cause: correlate.CauseUnshare, Call: correlate.Call{Syscall: "umount2"},
			Object: correlate.Object{Path: vol}, Holders: []correlate.Holder{{MntNS: 4026532111}}, Fix: "stop it"},
		"on the device": {Kind: correlate.KindFailure, Cause: correlate.CauseUnknown, Call: correlate.Call{Syscall: "openat"},
			Object: correlate.Object{Path: dev}, Fix: "look"},
		"naming only the holder namespace": {Kind: correlate.KindLeak, Cause: correlate.CauseUnshare, Call: correlate.Call{Syscall: "umount2"},
			Object: correlate.Object{Path: "/elsewhere"}, Holders: []correlate.Holder{{MntNS: ns}}, Fix: "stop it"},
		"as one more object of a teardown": {Kind: correlate.KindLeak, Cause: correlate.CauseUnshare, Call: correlate.Call{Syscall: "umount2"},
			Object: correlate.Object{Path: "/elsewhere"}, Others: []correlate.Object{{Path: vol}}, Fix: "stop it"},
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
		other := &correlate.Finding{Kind: correlate.KindLeak, Cause: correlate.CauseUnshare, Call: correlate.Call{Syscall: "umount2", MntNS: 4026531840},
			Object: correlate.Object{Path: "/tmp/cell/vol2"}, Holders: []correlate.Holder{{MntNS: 4026532111}}, Fix: "stop it"}
		l := &live{settleWait: func(testing.TB) {}, findings: []*correlate.Finding{other}}
		if r := privtest.Record(t, func(tb testing.TB) { control(tb, l, objs) }); r.Failed() {
			t.Errorf("the control's check fails on a finding about something else: %v", r.Reports())
		}
	})
}
