// Package state keeps mntleak's persistent lineage: a bounded, rotating
// on-disk log of the events that explain mount leaks (namespace creations
// and joins, mounts and unmounts; the daemon adds the exits of FUSE
// servers, which Keep alone does not keep), so that a restarted daemon, or `mntleak
// why` on an idle node, can still cite the namespace creation or the bind
// that happened before it started.
//
// The log is a directory of segments, lineage-<n>.jsonl, each starting with
// a header line naming the boot it belongs to; lines are the events' JSON
// (the stream format). Segments rotate at a quarter of the size cap and the
// oldest go when the cap is exceeded. A corrupt or truncated segment is
// skipped with one warning naming it, never fatal; a name that is not a
// regular file (a directory, a FIFO that would block a read) is neither
// read nor removed; segments of another boot are ignored (namespace
// inodes mean nothing across a reboot). Files are 0600.
//
// One daemon owns a state dir: Lock holds an flock on its "lock" file (the
// owner's pid inside) for the daemon's life; a second daemon gets a
// HeldError naming the first.
//
// Two more files live there: actions.jsonl, a record of what mntleak
// release did (one JSON line per action, written by release, counted by
// the daemon's metrics), and findings.jsonl, the daemon's findings by id
// (for mntleak release --finding ID); each rotates to NAME.1.
//
// Files: log.go (Open, Append, Flush, Read, Load, BootID, Keep), lock.go
// (Lock, HeldError), actions.go (AppendAction, CountActions), findings.go
// (AppendFinding, LookupFinding, FindingsWith).
package state
