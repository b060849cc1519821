package finding

// Covered is a situation an issue asked to explain that an existing cause
// already explains, as it shows: the cause, why that cause is its shape,
// a real finding line of it, and the issue threads it was read from.
// docs/causes.md lists them after the table.
type Covered struct {
	Situation string
	Cause     Cause
	Why       string
	// Source is the file, from the repository's root, that holds a real
	// finding line of the situation (a lab run's results), and Match a
	// piece of that line that finds it there (the lab writes each finding
	// by its headline): docs/causes.md quotes the
	// first line of Source that has Match.
	Source, Match string
	Threads       []string
}

// CoveredSituations lists the situations an existing cause covers.
func CoveredSituations() []Covered {
	return []Covered{{
		Situation: "A long-lived helper daemon in a private mount namespace (a DNS helper of a container network, " +
			"a backup or scan agent started by a runtime) that copied the host's mounts and blocks `dmsetup remove` or " +
			"`lvremove` of the device-mapper target (issue 28, item 3)",
		Cause: CauseUnshare,
		Why: "the helper's namespace is a private one its own unshare (or clone) made, which is the shape `unshare` " +
			"reads: the holder namespace's creator is known. The device's EBUSY names the helper, its unit, when its " +
			"namespace was made and from where, and what made its root private; the fix restarts it (or makes its root " +
			"a slave). The lab's systemd guest runs it for real with device-mapper: scenario 3-devicemapper, a unit " +
			"(lab-agent.service) that unshares and keeps a copy of a dm target's mount, then `dmsetup remove` fails",
		Source:  "docs/lab.md",
		Match:   "EBUSY dmsetup remove labdm",
		Threads: []string{"https://github.com/netblue30/firejail/issues/56", "https://github.com/moby/moby/pull/33846"},
	}}
}
