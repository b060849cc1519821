package findinglog

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/sink/output"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mntleak/mntleak/finding"
)

// TestFindingRoundTrip: a finding logged with output's fields (as the
// daemon logs it) reads back with every field Line has for it, and the
// lines that are not findings are told apart.
func TestFindingRoundTrip(t *testing.T) {
	f := &finding.Finding{Kind: finding.KindFailure, Cause: finding.CauseRprivateBind,
		Call:   finding.Call{PID: 40, Comm: "mkfs.ext4", Syscall: "openat", Errno: "EBUSY", MntNS: 1},
		Object: finding.Object{Path: "/dev/loop0"},
		Holders: []finding.Holder{{MntNS: 2, Where: "/x",
			Processes: []finding.ProcRef{{PID: 50, Comm: "node_exporter"}}}},
		Node: "node-1"}
	f.Holders[0].Actor = &finding.Actor{ProcRef: f.Holders[0].Processes[0], Role: finding.RoleMember}
	core, logs := observer.New(zap.InfoLevel)
	zap.New(core).Named("correlate").Log(output.FindingLevel(f), f.Line(), output.FindingFields(f)...)
	entry := logs.All()[0]
	m := map[string]any{"level": entry.Level.String(), "logger": entry.LoggerName, "msg": entry.Message}
	for k, v := range entry.ContextMap() {
		m[k] = v
	}
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	raw := string(b)
	got := Findings([]string{`{"level":"info","msg":"tracing"}`, `{"kind":"mount"}`, "not json", raw})
	if len(got) != 1 {
		t.Fatalf("%d findings, want 1", len(got))
	}
	l := got[0]
	want := Line{Level: "error", Logger: "correlate", Msg: f.Line(), Finding: "failure", FindingID: f.ID(), Headline: f.Headline(), Cause: "rprivate-bind",
		Syscall: "openat", Errno: "EBUSY", Path: "/dev/loop0", HolderPID: 50, HolderComm: "node_exporter", HolderRole: "member",
		HolderMntNS: 2, Node: "node-1", Detail: l.Detail, Raw: raw}
	if !reflect.DeepEqual(l, want) {
		t.Errorf("read back:\n%+v\nwant\n%+v", l, want)
	}
	if l.Detail == nil || l.Detail.Call.Comm != "mkfs.ext4" || !strings.Contains(l.Raw, `"detail"`) {
		t.Errorf("detail %+v", l.Detail)
	}
	if all := All([]string{`{"level":"info","msg":"tracing"}`, `{"kind":"mount"}`}); len(all) != 1 || all[0].IsFinding() {
		t.Errorf("All: %+v, want the one log line, not a finding", all)
	}
}
