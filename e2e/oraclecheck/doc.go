// Package oraclecheck compares the findings of the privileged tests with
// the oracle (package e2e/oracle): the one place that turns a
// finding.Finding (or a finding read back from the daemon's log) into the
// oracle's FindingFacts, takes the snapshot when a finding arrives, fails
// the test on a disagreement printing both the finding and the oracle's
// answer, checks a control's object is held by nothing after its teardown,
// and counts the comparisons of each test into $MNTLEAK_ORACLE_LOG (make
// test totals them).
//
// Use: c := oraclecheck.New(t); in the correlator's callback
// c.Witness(f); once the test knows a finding is its own (its device,
// its scenario) c.Check(t, f); for a daemon's log c.CheckLine(t, line);
// for a control c.Control(t, target, allowed...). Only for tests: it
// imports correlate, which the oracle itself never does.
//
// Files:
//   - facts.go: Facts, LineFacts (a finding's claims in the oracle's terms).
//   - checker.go: Checker (Witness, Check, CheckLine, CheckLogged, Control,
//     the counts).
//   - remote.go: Verdict, Judge (a comparison made where the test cannot
//     look: the lab's guest), Checker.Verdicts (counted as the test's).
//   - facts_test.go: the adapter, field by field.
package oraclecheck
