package correlate

import "github.com/mntleak/mntleak/finding"

// rule is one row of the cause table: the cause it concludes, the evidence
// it needs to conclude it, the fix it gives, and the check that reads the
// evidence and writes the verdict (summary, evidence items, exact fix).
type rule struct {
	cause finding.Cause
	needs string // the evidence the rule reads, in words
	fix   string // the fix it gives, in words (the verdict has the exact text)
	try   func(c *Correlator, a *analysis, m match) (verdict, bool)
}

// causeRules is the cause table, read top to bottom: the first rule whose
// evidence is there decides a holding's cause. The order is also the rank
// of the causes: among several holdings of one failure, the finding leads
// with the one whose rule comes first. Every cause is concluded by exactly
// one row; the last row always matches.
func causeRules() []rule {
	return []rule{
		{finding.CauseStaleBind, "a mount or move_mount that failed with ENOENT; the source is a mount in the caller's namespace (or the one it was copied from) whose root mountinfo shows as //deleted",
			"unmount the stale bind and bind the current file again; prefer whole-volume ConfigMap mounts over subPath",
			(*Correlator).staleBindRule},
		{finding.CauseBusyCopy, "an umount2 that failed with EBUSY (or why/release asked where the caller has it mounted, of a copy that is a peer or slave of the caller's mount); a copy in another namespace, and a process whose cwd, root, fd or mapping lies in it",
			"stop that process or move it off the copy, then retry (or unmount lazily)",
			(*Correlator).busyCopyRule},
		{finding.CauseSharedPropagation, "the object is mounted in the caller's namespace in a shared or slave peer group; a successful mount of it made in another namespace",
			"unmount it where it was mounted; HostToContainer instead of Bidirectional",
			(*Correlator).sharedPropagationRule},
		{finding.CauseInUse, "the object is mounted or busy in the caller's own namespace (its own cwd, or a process there)",
			"cd out / stop the processes there / unmount it first, then retry",
			(*Correlator).inUseRule},
		{finding.CausePrivateTmp, "the holder namespace's /tmp is a bind of /tmp/systemd-private-*-UNIT-*/tmp",
			"restart UNIT; keep the mounts shared or slave, or start UNIT before the containers",
			(*Correlator).privateTmp},
		{finding.CauseRprivateBind, "the copy lies under a private bind in the holder whose source is a directory of the namespace it came from (a container's hostPath); the rbind and make-private events when traced",
			"mountPropagation HostToContainer (docker -v SRC:DST:rslave); restart the container",
			(*Correlator).rprivateBind},
		{finding.CauseMountflagsRestart, "the caller runs in a namespace its daemon made by unshare; the holder is an older namespace made by the same daemon (creator or past member), created before the caller's",
			"remove MountFlags=slave from the daemon's unit; nsenter -t SURVIVOR -m umount PATH",
			(*Correlator).mountflagsRestart},
		{finding.CausePrivateParent, "the copy's parent mount is private in the holder; the parent namespace made it private (mount MS_PRIVATE or mount_setattr) before the holder was copied",
			"keep the parent shared or slave before namespaces are copied; restart the holder's processes",
			(*Correlator).privateParent},
		{finding.CauseUnshare, "the holder namespace's creator is known: its unshare/clone event, or its oldest process from /proc",
			"restart the creator and the processes in the namespace; create namespaces with slave propagation",
			(*Correlator).unshareRule},
		{finding.CauseUnknown, "nothing more than the copy itself",
			"nsenter into the namespace and unmount the copy",
			(*Correlator).unknownRule},
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
