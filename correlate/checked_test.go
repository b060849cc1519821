package correlate_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

// replayScenario replays a recorded scenario and reads its facts.
func replayScenario(t *testing.T, name string) ([]*finding.Finding, *facts) {
	t.Helper()
	path := filepath.Join("../e2e/scenarios", name, "stream.jsonl")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var got []*finding.Finding
	if err := correlate.Replay(f, name, func(fd *finding.Finding) { got = append(got, fd) }); err != nil {
		t.Fatal(err)
	}
	return got, recordedFacts(t, path)
}

// TestUpdateWritesOnlyCheckedGoldens: -update writes a golden only when the
// scenario's expectations pass. pid-reuse's real findings, checked
// against expectations that are wrong in one way each (another holder
// pid, role, namespace, creator, fix, one finding more or less), fail the
// check and the golden is not written; with its own expectations it is.
func TestUpdateWritesOnlyCheckedGoldens(t *testing.T) {
	got, x := replayScenario(t, "pid-reuse")
	right := scenarios["pid-reuse"]
	wrong := map[string]func([]expectation) []expectation{
		"another process named":   func(w []expectation) []expectation { w[1].actor = "unrelated"; return w },
		"another role":            func(w []expectation) []expectation { w[0].role = finding.RolePinner; return w },
		"another holder":          func(w []expectation) []expectation { w[1].holder = "unshare"; return w },
		"another creator":         func(w []expectation) []expectation { w[0].madeBy = "holder"; return w },
		"said to be inferred":     func(w []expectation) []expectation { w[0].madeBy = "inferred"; return w },
		"another fix":             func(w []expectation) []expectation { w[1].fix = nil; return w },
		"a finding less expected": func(w []expectation) []expectation { return w[:1] },
		"a finding more expected": func(w []expectation) []expectation { return append(w, w[1]) },
	}
	for name, mutate := range wrong {
		t.Run(name, func(t *testing.T) {
			want := mutate(append([]expectation(nil), right...))
			golden := filepath.Join(t.TempDir(), "findings.golden")
			r := privtest.Record(t, func(tb testing.TB) {
				checkExpectations(tb, got, want, x, true)
				writeGolden(tb, golden, got)
			})
			if !r.Failed() {
				t.Errorf("the check passed expectations that are wrong (%s)", name)
			}
			if _, err := os.Stat(golden); err == nil {
				t.Errorf("a golden was written although its expectations failed: %v", r.Reports())
			}
		})
	}
	t.Run("the right expectations", func(t *testing.T) {
		golden := filepath.Join(t.TempDir(), "findings.golden")
		r := privtest.Record(t, func(tb testing.TB) {
			checkExpectations(tb, got, right, x, true)
			writeGolden(tb, golden, got)
		})
		b, err := os.ReadFile(golden)
		if r.Failed() || err != nil || !bytes.Equal(b, goldenBytes(t, got)) {
			t.Errorf("the golden was not written as it should (%v): %v", err, r.Reports())
		}
	})
}

// TestControlCheckSeesAFalseLeak: a no-finding scenario's check fails
// when a leak is among its findings. day-in-the-life (a control) is
// replayed, its correlator flushed (Replay does), and a false leak on one
// of its containers' paths, as a wrong verdict would report it, is added
// to what came out: the check the control runs must fail.
func TestControlCheckSeesAFalseLeak(t *testing.T) {
	got, x := replayScenario(t, "day-in-the-life")
	leaks, _ := replayScenario(t, "pid-reuse")
	injected := *leaks[0]
	injected.Object.Path = "/var/lib/mntleak-scenarios/day-in-the-life/containers/c1/rootfs"
	r := privtest.Record(t, func(tb testing.TB) {
		checkExpectations(tb, append(got, &injected), scenarios["day-in-the-life"], x, true)
	})
	if !r.Failed() {
		t.Errorf("the control's check passed with a false leak among its findings: %s", injected.Line())
	}
	r = privtest.Record(t, func(tb testing.TB) { checkExpectations(tb, got, scenarios["day-in-the-life"], x, true) })
	if r.Failed() {
		t.Errorf("the control's check fails on the control's own findings: %v", r.Reports())
	}
}
