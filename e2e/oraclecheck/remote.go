package oraclecheck

import (
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/oracle"
	"github.com/mntleak/mntleak/finding"
)

// Verdict is one comparison of a finding with the oracle made where the
// test cannot look (the lab's guest: another kernel), as the program that
// made it writes it (one JSON object a line) and the test reads it back.
type Verdict struct {
	Line     string   `json:"line"`
	Lag      string   `json:"lag"` // how long after the call the snapshot was taken
	Disagree []string `json:"disagree,omitempty"`
	Moved    []string `json:"moved,omitempty"`
	Answer   string   `json:"answer"`
	// Error says why no comparison was made (a snapshot that failed).
	Error string `json:"error,omitempty"`
	// Unchecked says why a finding is not for the oracle (about no
	// device): logged, not counted.
	Unchecked string `json:"unchecked,omitempty"`
}

// Judge compares f with a snapshot taken now: what the guest's program
// does for every finding mntleak logs. ok is false for a finding about no
// device (nothing the oracle can look up).
func Judge(f *finding.Finding) (v Verdict, ok bool) {
	ff, ok := Facts(f)
	if !ok {
		return Verdict{}, false
	}
	v.Line = ff.Line
	a, err := oracle.Holders(ff.Target)
	if err != nil {
		v.Error = err.Error()
		return v, true
	}
	v.Lag = "call time unknown"
	if !ff.At.IsZero() {
		v.Lag = "snapshot " + a.Taken.Sub(ff.At).Round(time.Millisecond).String() + " after the call"
	}
	v.Disagree, v.Moved = oracle.Check(ff, a)
	v.Answer = a.String()
	return v, true
}

// Verdicts counts comparisons made elsewhere (Judge) as the test's own and
// fails t on each disagreement or failed snapshot, printing the finding
// and the oracle's answer.
func (c *Checker) Verdicts(t testing.TB, vs []Verdict) {
	t.Helper()
	for _, v := range vs {
		if v.Unchecked != "" {
			t.Logf("oracle: %s: %s", v.Unchecked, v.Line)
			continue
		}
		if v.Error != "" {
			t.Errorf("oracle: no snapshot for %s: %s", v.Line, v.Error)
			continue
		}
		c.mu.Lock()
		c.compared++
		if len(v.Disagree) > 0 {
			c.disagree++
		}
		if len(v.Moved) > 0 {
			c.moved++
		}
		c.mu.Unlock()
		if len(v.Disagree) > 0 {
			t.Errorf("the oracle disagrees with the finding (%s):\n  %s\n%s\n%s", v.Lag, v.Line, bullets(append(v.Disagree, v.Moved...)), v.Answer)
		} else if len(v.Moved) > 0 {
			t.Logf("oracle: the state moved before the check (%s; %s): %s", v.Lag, strings.Join(v.Moved, "; "), v.Line)
		}
	}
}
