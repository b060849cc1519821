package oraclecheck

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/oracle"
	"github.com/mntleak/mntleak/e2e/testkit/findinglog"

	"github.com/mntleak/mntleak/finding"
)

// EnvLog names the file each test appends its count of comparisons to.
const EnvLog = "MNTLEAK_ORACLE_LOG"

// Checker compares the findings of one test with the oracle. Witness
// takes the snapshot when a finding arrives; Check (the test has decided
// the finding is its own) reports the comparison, once per finding.
type Checker struct {
	t        testing.TB
	mu       sync.Mutex
	snapMu   sync.Mutex // one snapshot at a time; a fresh one serves every finding before it
	last     *oracle.Snapshot
	pending  sync.WaitGroup
	witness  map[*finding.Finding]chan oracle.Answer
	checked  map[*finding.Finding]bool
	lines    map[string]bool
	compared int
	disagree int
	moved    int
}

// New returns the test's checker; at the test's end it appends its counts
// to the file $MNTLEAK_ORACLE_LOG names (when set).
func New(t testing.TB) *Checker {
	c := &Checker{t: t, witness: map[*finding.Finding]chan oracle.Answer{},
		checked: map[*finding.Finding]bool{}, lines: map[string]bool{}}
	t.Cleanup(func() {
		c.pending.Wait()
		c.appendCounts()
	})
	return c
}

// Witness starts the snapshot for a finding that has just arrived (call it
// from the correlator's callback: it does not block the event path).
func (c *Checker) Witness(f *finding.Finding) {
	arrived := time.Now()
	ch := make(chan oracle.Answer, 1)
	c.mu.Lock()
	c.witness[f] = ch
	c.mu.Unlock()
	ff, ok := Facts(f)
	if !ok {
		close(ch)
		return
	}
	c.pending.Add(1)
	go func() {
		defer c.pending.Done()
		s, err := c.snapshotSince(arrived)
		if err != nil {
			c.t.Errorf("oracle snapshot: %v", err)
			close(ch)
			return
		}
		ch <- s.Holders(ff.Target)
	}()
}

// snapshotSince is a snapshot begun no earlier than t.
func (c *Checker) snapshotSince(t time.Time) (*oracle.Snapshot, error) {
	c.snapMu.Lock()
	defer c.snapMu.Unlock()
	if c.last != nil && !c.last.Taken.Before(t) {
		return c.last, nil
	}
	s, err := oracle.Take()
	if err == nil {
		c.last = s
	}
	return s, err
}

// Check compares the test's finding f with the oracle's answer taken when
// it arrived (now, if it was not witnessed), and fails t on a disagreement.
func (c *Checker) Check(t testing.TB, f *finding.Finding) {
	t.Helper()
	c.mu.Lock()
	if c.checked[f] {
		c.mu.Unlock()
		return
	}
	c.checked[f] = true
	ch := c.witness[f]
	c.mu.Unlock()
	ff, ok := Facts(f)
	if !ok {
		t.Logf("oracle: not checkable (no device): %s", f.Line())
		return
	}
	var a oracle.Answer
	var got bool
	if ch != nil {
		a, got = <-ch
	}
	if !got {
		var err error
		if a, err = oracle.Holders(ff.Target); err != nil {
			t.Errorf("oracle: %v", err)
			return
		}
	}
	c.report(t, ff, a)
}

// CheckLine checks a finding read from the daemon's log: the snapshot is
// taken now (the log was read after the fact: Late), once per finding line.
func (c *Checker) CheckLine(t testing.TB, l findinglog.Line) {
	t.Helper()
	c.mu.Lock()
	seen := c.lines[l.Raw]
	c.lines[l.Raw] = true
	c.mu.Unlock()
	ff, ok := LineFacts(l)
	if seen || !ok {
		return
	}
	ff.Late = true
	a, err := oracle.Holders(ff.Target)
	if err != nil {
		t.Errorf("oracle: %v", err)
		return
	}
	c.report(t, ff, a)
}

// CheckLogged checks the findings a test read from a daemon's log (the
// test's own: about its objects) with a checker of their own: for the
// log readers, which keep no state between their reads.
func CheckLogged(t testing.TB, lines ...findinglog.Line) {
	t.Helper()
	if len(lines) == 0 {
		return
	}
	c := New(t)
	for _, l := range lines {
		if l.IsFinding() {
			c.CheckLine(t, l)
		}
	}
}

func (c *Checker) report(t testing.TB, ff oracle.FindingFacts, a oracle.Answer) {
	t.Helper()
	d, moved := oracle.Check(ff, a)
	c.mu.Lock()
	c.compared++
	if len(d) > 0 {
		c.disagree++
	}
	if len(moved) > 0 {
		c.moved++
	}
	c.mu.Unlock()
	lag := "call time unknown"
	if !ff.At.IsZero() {
		lag = "snapshot " + a.Taken.Sub(ff.At).Round(time.Millisecond).String() + " after the call"
	}
	if len(d) > 0 {
		t.Errorf("the oracle disagrees with the finding (%s):\n  %s\n%s\n%s", lag, ff.Line, bullets(append(d, moved...)), a)
	} else if len(moved) > 0 {
		t.Logf("oracle: the state moved before the check (%s; %s): %s", lag, strings.Join(moved, "; "), ff.Line)
	}
}

// Control asserts that nothing holds target outside the allowed
// namespaces: a control after its teardown. paths are where the control
// had it mounted (what tells a tmpfs's reused device number apart).
func (c *Checker) Control(t testing.TB, target oracle.Target, paths []string, allowed ...uint32) {
	t.Helper()
	a, err := oracle.Holders(target)
	if err != nil {
		t.Errorf("oracle: %v", err)
		return
	}
	var ok []uint64
	for _, ns := range allowed {
		ok = append(ok, uint64(ns))
	}
	d := oracle.Unheld(a, paths, ok...)
	c.mu.Lock()
	c.compared++
	if len(d) > 0 {
		c.disagree++
	}
	c.mu.Unlock()
	if len(d) > 0 {
		t.Errorf("control: the oracle finds %s held:\n%s\n%s", target, bullets(d), a)
	}
}

func bullets(ss []string) string {
	return "  - " + strings.Join(ss, "\n  - ")
}

// appendCounts appends "oracle: BINARY TEST: N comparisons, M
// disagreements, K moved" to $MNTLEAK_ORACLE_LOG.
func (c *Checker) appendCounts() {
	path := os.Getenv(EnvLog)
	if path == "" {
		return
	}
	c.mu.Lock()
	line := fmt.Sprintf("oracle: %s %s: %d comparisons, %d disagreements, %d moved\n",
		strings.TrimSuffix(filepath.Base(os.Args[0]), ".test"), c.t.Name(), c.compared, c.disagree, c.moved)
	c.mu.Unlock()
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		c.t.Errorf("oracle log: %v", err)
		return
	}
	defer f.Close()
	if _, err := f.WriteString(line); err != nil {
		c.t.Errorf("oracle log %s: %v", path, err)
	}
}
