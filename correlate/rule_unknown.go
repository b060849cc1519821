package correlate

import "github.com/mntleak/mntleak/finding"

// ruleUnknown: a namespace holds a copy and nothing more is known; the
// verdict says what is missing.
func (c *Correlator) ruleUnknown(a *analysis, m match) (verdict, bool) {
	if m.kept != nil {
		v := c.keptVerdict(a, m)
		v.missing = []string{"who created " + finding.NSName(m.ns.Ino) + " (before tracing began)"}
		return v, true
	}
	n := m.ns
	prop := RootPropagation(m.table)
	return verdict{
		cause:    finding.CauseUnknown,
		summary:  finding.NSName(n.Ino) + " holds a copy (" + prop + " root)" + c.stayed(a),
		evidence: []finding.Evidence{factEvidence(mountFact(n.Ino, m.mount))},
		fix:      "nsenter into " + finding.NSName(n.Ino) + " and unmount " + m.where,
		missing:  []string{"how and by whom " + finding.NSName(n.Ino) + " was created", "any process in it"},
	}, true
}
