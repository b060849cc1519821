// Package correlate turns mntleak's event stream into findings: for every
// failure that points at a mount (EBUSY, umount2 EINVAL, mount ENOENT) it
// names who still holds the object, in which mount namespace, and the
// earlier event that leaked it there, with the fix; and it reports a leak at
// the moment one forms (an unmount that leaves a copy behind elsewhere).
//
// It is pure Go and deterministic: events in, findings out. Time is the
// events' own (the injected clock of a replay is the recorded stream); /proc
// is reached only through procfs.Proc, so tests and `mntleak replay` feed it
// recorded snapshots. The parts:
//
//   - Lineage: every mount namespace known, how and by whom it was created,
//     its members over time, and when its last member left.
//   - Ledger: per namespace, the mount table last read from /proc, plus the
//     recent mount-family events (the evidence).
//   - holders.go: the search for every namespace and process that still
//     holds an object (device, path through bind roots, overlay, nsfs).
//   - classify.go: the Cause of each holding, with its evidence and fix.
//   - finding.go: the Finding and its one-line form (Line); report.go: the
//     form `mntleak why` prints, a line per holding process.
package correlate
