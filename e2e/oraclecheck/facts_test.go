package oraclecheck

import (
	"reflect"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/oracle"
	"github.com/mntleak/mntleak/e2e/testkit/findinglog"
	"github.com/mntleak/mntleak/event"

	"github.com/mntleak/mntleak/finding"
)

// TestFacts: what a finding claims, in the oracle's terms: the device,
// every holder with its members, pins and actor, exited and detached as
// the finding says; nsfs and stale-bind objects by their root; none for a
// finding about no device.
func TestFacts(t *testing.T) {
	call := time.Unix(100, 0)
	f := &finding.Finding{Kind: finding.KindLeak, Cause: finding.CauseUnshare,
		Call:   finding.Call{Time: call, PID: 9, MntNS: 1},
		Object: finding.Object{Path: "/vol", Dev: event.MakeDev(7, 3), FSType: "ext4", Root: "/"},
		Holders: []finding.Holder{
			{MntNS: 2, Where: "/vol", Also: []string{"/other"}, Processes: []finding.ProcRef{{PID: 20}, {PID: 21}},
				Pins:  []finding.PinRef{{ProcRef: finding.ProcRef{PID: 30}, Pin: "cwd"}},
				Actor: &finding.Actor{ProcRef: finding.ProcRef{PID: 30}, Role: finding.RolePinner, Pin: "cwd"}},
			{MntNS: 3, Exited: call, Detached: true},
		}}
	got, ok := Facts(f)
	want := oracle.FindingFacts{Line: f.Line(), At: call, Kind: "leak", Target: oracle.Target{Major: 7, Minor: 3}, CallerNS: 1,
		Paths: []string{"/vol", "/vol", "/other"},
		Holders: []oracle.HolderFacts{
			{NS: 2, Members: []int{20, 21}, Pins: []oracle.PinFacts{{PID: 30, Pin: "cwd"}}, Actor: &oracle.ActorFacts{PID: 30, Role: "pinner", Pin: "cwd"}},
			{NS: 3, Exited: true, Detached: true},
		}}
	if !ok || !reflect.DeepEqual(got, want) {
		t.Errorf("Facts:\n%+v\nwant\n%+v", got, want)
	}
	f.Object.FSType, f.Object.Root = "nsfs", "net:[4026532300]"
	if got, _ := Facts(f); got.Target.Root != "net:[4026532300]" {
		t.Errorf("nsfs object: target %v, want by its root", got.Target)
	}
	f.Object.FSType, f.Cause, f.Object.Root = "ext4", finding.CauseStaleBind, "/f//deleted"
	if got, _ := Facts(f); got.Target.Root != "/f//deleted" {
		t.Errorf("stale bind: target %v, want by its root", got.Target)
	}
	if _, ok := Facts(&finding.Finding{Kind: finding.KindFailure}); ok {
		t.Error("a finding about no device is checkable")
	}
	l := findinglog.Line{Msg: "line", Detail: f}
	if got, ok := LineFacts(l); !ok || got.Line != "line" {
		t.Errorf("LineFacts: %v %v", got.Line, ok)
	}
	if _, ok := LineFacts(findinglog.Line{Msg: "x"}); ok {
		t.Error("a log line without detail is checkable")
	}
}
