// Package correlate turns mntleak's event stream into findings: for every
// failure that points at a mount (EBUSY, umount2 EINVAL, mount ENOENT) it
// names who still holds the object, in which mount namespace, and the
// earlier event that leaked it there, with the fix; and it reports a leak at
// the moment one forms (an unmount that leaves a copy behind elsewhere).
//
// It is pure Go and deterministic: events in, findings out (the findings'
// types and their rendering are package finding's). Time is the events'
// own (the injected clock of a replay is the recorded stream); /proc is
// reached only through procfs.Proc, so tests and `mntleak replay` feed it
// recorded snapshots.
//
// One event: Prepare, then Handle (correlator.go), which takes it through
// the steps, each in the file of the type that owns it. The lineage
// learns namespaces and members (lineage.go); the ledger reads and learns
// mount tables and keeps the recent mount events (ledger.go); an unmount
// is checked for copies that stayed behind (leak.go), found by the holder
// search (holders.go), and reported once the teardown has settled
// (settle.go, confirm.go); a failure is analysed (analyze.go): the
// object's identity, every namespace that holds it (holders.go) and the
// processes that pin it; each holding gets its cause from one rule table
// (rules.go: read top to bottom, first match wins, in the order package
// finding declares the causes; each rule is rule_<slug>.go, named
// rule<Cause>) and the holdings are assembled into one Finding
// (assemble.go).
//
// Adding a cause: its constant and its row (slug, leak, releasable, the
// evidence it needs, its fix) in finding/cause.go, at its place in the
// order; its rule in rule_<slug>.go and its row in rules.go; a scenario
// under e2e/scenarios. docs/causes.md is written from the row (go
// test ./finding -run TestCausesDoc -update), and go test ./finding fails
// until the README lists it.
//
// Files:
//   - correlator.go: one event's way in. Prepare and Sources, the one
//     step before an event is recorded and handed to Handle: what the
//     engine needs of it that the kernel did not give (executable, the
//     cgroup of the process a finding may name, birth id, teardown
//     device); which events are failures worth explaining and which
//     change mount tables. Options, New and Handle, and what Handle does
//     for a namespace's creation or join (lineageEvent, created): an
//     unshare or a setns joins a process to a namespace only from its
//     main thread (another thread's unshare still makes the namespace).
//   - remember.go: Remember, the persistent lineage of an earlier run; a
//     namespace whose inode another one has now (its birth id differs)
//     loses that history at Start.
//   - lineage.go: the lineage's step, what each event does to it
//     (Created, Join, Exit, a namespace retired, expired, revived); a creation that reuses an
//     inode the lineage knows, or copies a holder of a leak that settles
//     now, is applied before anything else (retireBeforeCreation,
//     copiesAHolder); a retired namespace that is still alive (entered
//     again, kept by a bind of its nsfs file) is the same generation,
//     revived with its creation; namespace.go: Lineage, Namespace,
//     Member: namespaces and their members over time, and what is asked
//     of them; lineage_pinned.go: the namespaces a bind of their nsfs file
//     keeps alive with no process in them, and the exit that reaches a
//     generation a process list retired before the exit was handled
//     (exitRetired: its creator's name, what a bind brings back);
//     lineage_list.go: a process list applied to the lineage (Reconcile),
//     or the processes of one namespace alone (place); tasks.go: the
//     tracer's task map in place of a process list, where it is complete
//     (liveTasks): a namespace none of whose known processes is left
//     (runc's child made it and exited) gets the processes the map has in
//     it, or is retired when it was born under tracing and the map has
//     none (placeByTasks);
//     reused.go: Start, the startup
//     snapshot, and refresh, the process list and the stale tables read
//     again before a verdict; the process list read (scan, rescanFor) and
//     applied to the lineage (reconcile); a namespace whose inode the
//     process list shows another namespace has (its birth id differs) is
//     retired, never revived for it, and every holder names its
//     namespace's birth id where a process of it tells; gc.go: what is
//     forgotten, and when (and the mounts the ledger holds).
//   - ledger.go: Table and Ledger, the mount tables read from /proc
//     (readTable; through the process that made a namespace's latest
//     mount, readThroughMounter; again once its mount activity settled,
//     settle), indexed by mount and by peer group; reach.go: which tables
//     an event can have changed (none but its own namespace's: a
//     namespace's creation, a pivot_root, a bind remount, a plain mount
//     where nothing is shared; those its parent's peer group reaches;
//     those in any peer group, for what acts only by propagation; or
//     every table: a superblock remount); history.go: the recent mount events kept as
//     evidence, bounded, a trim sparing the propagation changes and
//     recursive binds of live namespaces and their parents (a storm
//     elsewhere does not push out dockerd's MS_PRIVATE); peergroups.go: a mount's propagation (its
//     peer group tags, private, shared, slave; a table's root's);
//     mountnotes.go: Note, the kernel's word (event.MountNote: fanotify's
//     mount-namespace marks, read by the daemon) that a mount was attached
//     to or detached from a watched namespace, applied to its table at
//     once (a copy a host's rmdir detached, a bind made in it); a watched
//     namespace's table kept true by them (keptTrue: a mount elsewhere no
//     longer makes it stale, a remount or a propagation change does);
//     TableOf; a pending leak whose copy the kernel detached dropped at
//     the next event when nothing holds it (dropDetached); a namespace's
//     teardown (its root's detach) leaves the table it showed while it
//     lived (Ledger.Lived, what Forget returns).
//   - analyze.go: a failure, from the event to the holdings and pins.
//   - pin_search.go: the pin search, the processes keeping an object's
//     filesystem busy in the holder namespaces (those started after the
//     failure left out), and the nsfs files that name a namespace.
//   - pin_bound.go: the processes a failure's pin search in holder
//     namespaces reads (their members, the pids the lineage does not
//     know, those a thread of which moved), the lineage's index of pids,
//     and when the search reads every process instead.
//   - pin_threads.go: a process's open file or mapping held through a
//     thread of its own in a holder namespace, placed in that namespace.
//   - holders.go: an object's identity (device, path through bind roots,
//     overlay, nsfs), a table's mounts by path (At, Containing, Parent),
//     what an unmount took away and the mount event that made it, and the
//     search for its copies (in every table, and detached ones in no
//     table); kept.go: namespaces no
//     process runs in, kept by a bind of their nsfs file or by a process
//     holding it open, read through it, and their verdict; a namespace
//     with processes that such a bind keeps too (markBound, boundVerdict:
//     a runtime confined in a namespace of its own, snapd's
//     /run/snapd/ns/SNAP.mnt); kernelns.go: where the kernel lists its
//     mount namespaces and reads any one's table by id, the scan of every
//     process's open files for a namespace held open runs only when one
//     no process runs in may hold the object; and where the Proc reads
//     many tables at once (procfs.TableReader), the snapshot and a refresh
//     read one per namespace in one batch (readTables).
//   - verdict.go: the analysis a rule reads and the verdict it writes; a
//     holding the search found (match).
//   - rules.go: the rule table (cause, rule), classify and the causes'
//     rank. One file per cause, in the table's order:
//     rule_stale_bind.go (mount ENOENT from a bind whose source was
//     deleted, and the finding made on that failure),
//     rule_dead_fuse_daemon.go (a FUSE mount whose server was killed
//     without unmounting it; the servers and their exits it keeps),
//     rule_busy_copy.go, rule_rootfs_held.go (a container's rootfs kept
//     busy by a process outside it, before shared-propagation: runc's
//     bind of the rootfs onto itself propagates nowhere),
//     rule_double_mount.go (an object mounted at two paths, a CSI node
//     plugin's staging path and a directory of its own: the unmount of
//     one succeeded, the other holds it; before shared-propagation, since
//     a plugin's container publishes both mounts),
//     rule_shared_propagation.go (with the last table of a namespace
//     that published a mount, read through the process that mounted or
//     its parent, kept while the mount is in the history),
//     rule_in_use.go (with the caller's own cwd),
//     rule_private_tmp.go, rule_rprivate_bind.go (the bind a runtime
//     made, and the directory it is a bind of),
//     rule_mountflags_restart.go, rule_private_parent.go, rule_unshare.go,
//     rule_unknown.go; prevention.go: how to keep a namespace's copy from
//     staying (which mount stopped the unmount, and where).
//   - assemble.go: holdings grouped into one Finding (each holder made
//     from its match, holderOf), the primary verdict;
//     the processes it names asked what they run now (freshen).
//   - leak.go: leaks as they form (also in a namespace found gone at the
//     unmount: its copy went detached with it); origin.go: an unmount of
//     a copy the caller's namespace got from one that still has the
//     object (a private copy of the node's cleaned up) leaks nothing;
//     settle.go: reported once
//     the teardown has settled, one finding per teardown and holder, led
//     by the object the user cares about (a pod's volume, a volume, a
//     rootfs, then the runtime's internals); confirm.go: what the settle
//     confirms, that a copy is still there (or the filesystem is still
//     mounted at another path of the holder's namespace, or a process
//     keeps the detached copy busy, from the holder's namespace or from
//     anywhere when no table shows the object any more), naming the
//     processes that pin the copies then.
//   - evidence.go: evidence items and event summaries; calls.go: what an
//     event's call did (flag bits, errno); attribution.go: container,
//     systemd unit and pod from cgroup paths, and the words that name an
//     event's process by them ("mounter[701] (pod UID)": the cgroup the
//     event carried names it also once it and its pod are gone).
//   - why.go: `mntleak why`, the holdings of an object asked about on
//     demand (the checks of `mntleak audit` read the engine from package
//     audit); replay.go: a recorded stream replayed; loss.go: lost events
//     in the evidence window.
package correlate
