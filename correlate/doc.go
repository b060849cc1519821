// Package correlate turns mntleak's event stream into findings: for every
// failure that points at a mount (EBUSY, umount2 EINVAL, mount ENOENT) it
// names who still holds the object, in which mount namespace, and the
// earlier event that leaked it there, with the fix; and it reports a leak at
// the moment one forms (an unmount that leaves a copy behind elsewhere).
//
// It is pure Go and deterministic: events in, findings out. Time is the
// events' own (the injected clock of a replay is the recorded stream); /proc
// is reached only through procfs.Proc, so tests and `mntleak replay` feed it
// recorded snapshots.
//
// One event through Handle: the lineage learns namespaces and members
// (lineage.go), the ledger learns mount tables and keeps the recent mount
// events (ledger.go); a failure is analysed (analyze.go): the object's
// identity, every namespace that holds it (holders.go) and the processes
// that pin it; each holding gets its cause from one rule table (rules.go:
// read top to bottom, first match wins; the rules themselves live in
// classify.go, namespace_causes.go and stalebind.go) and the holdings are assembled into one Finding (assemble.go). An unmount
// is checked for copies that stayed behind (leak.go).
//
// Files:
//   - correlator.go: Options, New, Start, Handle; which events are
//     failures worth explaining; an unshare or a setns joins a process
//     to a namespace only from its main thread (another thread's unshare
//     still makes the namespace).
//   - remember.go: Remember, the persistent lineage of an earlier run; a
//     namespace whose inode another one has now (its birth id differs)
//     loses that history at Start.
//   - lineage.go: Lineage, Namespace, Member: namespaces and their members
//     over time; lineage_pinned.go: a retired namespace that is still
//     alive (entered again, kept by a bind of its nsfs file) is the same
//     generation, revived with its creation; gc.go: what is forgotten, and
//     when.
//   - ledger.go, tableindex.go, peergroups.go: Table and Ledger, the mount
//     tables read from /proc, indexed by mount and by peer group.
//   - analyze.go: a failure, from the event to the holdings and pins.
//   - holders.go: an object's identity (device, path through bind roots,
//     overlay, nsfs) and the search for its copies; kept.go: namespaces no
//     process runs in, kept by a bind of their nsfs file or by a process
//     holding it open, read through it.
//   - rules.go: the cause table (cause, evidence it needs, fix), classify
//     and the causes' rank; docs/causes.md is written from it.
//   - classify.go: the analysis, the verdict, and the rules for a copy made
//     by a bind (busy-copy, private-tmp, rprivate-bind).
//   - namespace_causes.go: the rules for a copy kept by its namespace
//     (mountflags-restart, private-parent, unshare, unknown, in-use with
//     the caller's own cwd); prevention.go: how to keep such a copy from
//     staying (which mount stopped the unmount, and where); shared.go:
//     shared-propagation, and the mount event that made an object.
//   - assemble.go: holdings grouped into one Finding, the primary verdict;
//     the processes it names asked what they run now (freshen).
//   - leak.go: leaks as they form (also in a namespace found gone at the
//     unmount: its copy went detached with it); settle.go: reported once the teardown
//     has settled, if a copy is still there (or the filesystem is still
//     mounted at another path of the holder's namespace, or a process
//     keeps the detached copy busy, from the holder's namespace or from
//     anywhere when no table shows the object any more), one finding per
//     teardown and holder,
//     led by the object the user cares about (a pod's volume, a volume,
//     a rootfs, then the runtime's internals), naming the processes that
//     pin the copies then;
//     stalebind.go: mount ENOENT from a bind whose source was deleted
//     (the stale-bind rule).
//   - cause.go: Cause and its slugs; finding.go: Finding, its parts and
//     its id; line.go: its one-line form, the only place a finding is
//     rendered as a line; report.go: the form `mntleak why` prints; workload.go: the
//     pod and container names a finding carries once enriched (package
//     enrich, off the event path), the pod terms its line starts with, and
//     NamePods (a pod the correlator named by UID, by its name).
//   - evidence.go: evidence items and event summaries; calls.go: what an
//     event's call did (flag bits, errno); attribution.go: container,
//     systemd unit and pod from cgroup paths.
//   - why.go, audit.go, risks.go: `mntleak why` and `mntleak audit`;
//     replay.go: a recorded stream replayed; loss.go: lost events in the
//     evidence window.
package correlate
