package correlate

import "github.com/mntleak/mntleak/finding"

// rule is one row of the engine's rule table: the cause it concludes and
// the check that reads the evidence and writes the verdict (summary,
// evidence items, exact fix). What the cause is, the evidence it needs and
// its fix in words, whether it is a leak and whether release may act on
// it, is the cause's row of package finding's cause table
// (finding.Cause.Info): docs/causes.md is written from it.
type rule struct {
	cause finding.Cause
	try   func(c *Correlator, a *analysis, m match) (verdict, bool)
}

// causeRules is the rule table, read top to bottom: the first rule whose
// evidence is there decides a holding's cause. The order is also the rank
// of the causes: among several holdings of one failure, the finding leads
// with the one whose rule comes first. It is the order the causes are
// declared in (TestCauseTable). Every cause is concluded by exactly one
// row, in its own file rule_<slug>.go; the last row always matches.
func causeRules() []rule {
	return []rule{
		{finding.CauseStaleBind, (*Correlator).ruleStaleBind},
		{finding.CauseDeadFuseDaemon, (*Correlator).ruleDeadFuseDaemon},
		{finding.CauseBusyCopy, (*Correlator).ruleBusyCopy},
		{finding.CauseRootfsHeld, (*Correlator).ruleRootfsHeld},
		{finding.CauseDoubleMount, (*Correlator).ruleDoubleMount},
		{finding.CauseSharedPropagation, (*Correlator).ruleSharedPropagation},
		{finding.CauseInUse, (*Correlator).ruleInUse},
		{finding.CausePrivateTmp, (*Correlator).rulePrivateTmp},
		{finding.CauseRprivateBind, (*Correlator).ruleRprivateBind},
		{finding.CauseMountflagsRestart, (*Correlator).ruleMountflagsRestart},
		{finding.CausePrivateParent, (*Correlator).rulePrivateParent},
		{finding.CauseUnshare, (*Correlator).ruleUnshare},
		{finding.CauseUnknown, (*Correlator).ruleUnknown},
	}
}

// classify decides the cause of one holding: the first rule of the table
// that matches.
func (c *Correlator) classify(a *analysis, m match) verdict {
	for _, r := range c.rules {
		if v, ok := r.try(c, a, m); ok {
			v.cause = r.cause
			return v
		}
	}
	// The last rule always matches; reaching here is a broken table.
	return verdict{cause: finding.CauseUnknown, summary: finding.NSName(m.ns.Ino) + " holds a copy"}
}

// rankOf is a cause's position in the table: lower is more specific.
func (c *Correlator) rankOf(cause finding.Cause) int {
	for i, r := range c.rules {
		if r.cause == cause {
			return i
		}
	}
	return len(c.rules)
}
