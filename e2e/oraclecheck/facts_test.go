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

// TestThreadPinnerAgrees: a leak whose copy a thread's own cwd pins names
// the process by that thread (prog[60] thread 61 cwd /vol, the actor a
// pinner): read into the oracle's terms and checked against an answer in
// which the oracle found that thread's cwd on the device, the finding
// agrees, the actor by its thread as its pin (TestThreadCwdPinsItsCopy in
// e2e/variants, on the kernel, said 'the finding says pid N pins 7:0 by
// its cwd; the oracle finds no such pin').
func TestThreadPinnerAgrees(t *testing.T) {
	call := time.Unix(100, 0)
	thread := finding.ProcRef{PID: 60, TID: 61, Comm: "prog"}
	f := &finding.Finding{Kind: finding.KindLeak, Cause: finding.CauseUnshare,
		Call:   finding.Call{Time: call, PID: 9, MntNS: 1},
		Object: finding.Object{Path: "/vol", Dev: event.MakeDev(7, 3), FSType: "ext4", Root: "/"},
		Holders: []finding.Holder{{MntNS: 2, Where: "/vol", Processes: []finding.ProcRef{thread},
			Pins:  []finding.PinRef{{ProcRef: thread, MntNS: 2, Pin: "cwd", Path: "/vol"}},
			Actor: &finding.Actor{ProcRef: thread, Role: finding.RolePinner, Pin: "cwd", Path: "/vol"}}}}
	facts, ok := Facts(f)
	if !ok {
		t.Fatal("a leak of a block device is not checkable")
	}
	a := oracle.Answer{Target: oracle.Target{Major: 7, Minor: 3},
		Namespaces: []oracle.Holding{{Inode: 2, Points: []string{"/vol"}, Members: []oracle.ProcRef{{PID: 60, TID: 61, Comm: "prog"}}}},
		Pins:       []oracle.Pin{{ProcRef: oracle.ProcRef{PID: 60, TID: 61, Comm: "prog"}, MntNS: 2, How: "cwd", InNS: 2}},
		Live:       map[int]bool{1: true, 9: true, 60: true},
		Exists:     map[uint64]bool{1: true, 2: true}}
	if d, moved := oracle.Check(facts, a); len(d) != 0 || len(moved) != 0 {
		t.Errorf("disagreements %q, moved %q; want none:\n%s", d, moved, f.Line())
	}
}
