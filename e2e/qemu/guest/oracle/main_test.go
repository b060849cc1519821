package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/oraclecheck"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// TestFollowJudgesEveryFinding: of a journal's entries, the findings are
// judged (one verdict each, in order) and the rest skipped; a finding on a
// device nothing holds, which says a namespace holds it, is a
// disagreement (or, the namespace being gone, moved).
func TestFollowJudgesEveryFinding(t *testing.T) {
	privtest.Require(t)
	f := finding.Finding{Kind: finding.KindLeak, Call: finding.Call{Syscall: "umount2"}, Cause: finding.CauseUnshare,
		Object:  finding.Object{Path: "/srv/none", Dev: event.MakeDev(7, 250)},
		Holders: []finding.Holder{{MntNS: 4026599999, Where: "/srv/none"}}, Fix: "stop it"}
	detail, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	entry, err := json.Marshal(map[string]string{"MNTLEAK_FINDING": "leak", "MNTLEAK_DETAIL": string(detail), "MESSAGE": f.Line()})
	if err != nil {
		t.Fatal(err)
	}
	in := `{"MESSAGE":"tracing"}` + "\n" + string(entry) + "\n"
	var out strings.Builder
	if err := follow(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d verdicts, want 1:\n%s", len(lines), out.String())
	}
	var v oraclecheck.Verdict
	if err := json.Unmarshal([]byte(lines[0]), &v); err != nil {
		t.Fatal(err)
	}
	if v.Error != "" || v.Line != f.Line() || len(v.Disagree)+len(v.Moved) == 0 {
		t.Errorf("verdict %+v, want the finding's line judged not held", v)
	}
}
