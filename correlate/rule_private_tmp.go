package correlate

import "github.com/mntleak/mntleak/finding"

func (c *Correlator) rulePrivateTmp(a *analysis, m match) (verdict, bool) {
	if m.self || m.table == nil {
		return verdict{}, false
	}
	tmp := m.table.At("/tmp")
	if tmp == nil {
		return verdict{}, false
	}
	unit := PrivateTmpUnit(tmp.Root)
	if unit == "" {
		return verdict{}, false
	}
	v := verdict{cause: finding.CausePrivateTmp, inferred: m.ns.Event == nil}
	v.evidence = append(v.evidence, factEvidence(finding.NSName(m.ns.Ino)+" binds /tmp from "+tmp.Root+" (PrivateTmp=yes of "+unit+")"))
	created := "before tracing began"
	if m.ns.Event != nil {
		v.evidence = append(v.evidence, creationEvidence(m.ns, "namespace created: "))
		created = "by " + finding.ProcName(m.ns.Creator.Comm, m.ns.Creator.PID) + " at " + finding.Clock(m.ns.Created)
	}
	order := ""
	if mnt := c.mountEventFor(a.id, m.ns.Created); mnt != nil {
		v.evidence = append(v.evidence, eventEvidence(mnt, "object mounted: "+eventSummary(mnt)))
		if !m.ns.Created.IsZero() && mnt.Time.Before(m.ns.Created) {
			order = ", after " + a.id.path + " was mounted at " + finding.Clock(mnt.Time) + ", so it copied it"
		}
	}
	v.evidence = append(v.evidence, factEvidence(mountFact(m.ns.Ino, m.mount)))
	v.summary = "held by the PrivateTmp namespace of " + unit + " (" + finding.NSName(m.ns.Ino) + ", created " + created + order + ")" + c.stayed(a)
	v.fix = "restart " + unit + " to release its copy; to prevent it, keep the mounts below " + parentDir(m.where) +
		" shared or slave so unmounts propagate into " + unit + "'s slave namespace, or start " + unit + " before the containers"
	return v, true
}
