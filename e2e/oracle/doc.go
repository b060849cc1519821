// Package oracle answers, from the kernel's own state at one moment, who
// holds a filesystem: which mount namespaces have it mounted and where,
// and which processes hold it and how (a member of such a namespace, by
// its main thread or, named with its tid, by a thread of its own; its
// cwd, root, an open file or a mapping on it; a copy the kernel detached
// that such a file still pins; an nsfs bind or an open nsfs file keeping a
// holder namespace no process runs in). The privileged tests compare every
// finding the engine makes with it (package e2e/oraclecheck): it is the
// independent check of a verdict, so it shares no code with the engine —
// it imports no mntleak package (oracle_test.go fails if it does), only
// the standard library and golang.org/x/sys/unix.
//
// How it reads: every mount namespace by the nsfs walk NS_MNT_GET_NEXT /
// NS_MNT_GET_PREV (also namespaces no process runs in), each one's table
// by listmount/statmount with the namespace's id; every process's mount
// namespace, cwd and root and open fds (statx with STATX_MNT_ID_UNIQUE
// through the /proc magic links: device and mount, detached or not), and
// the files it maps (/proc/PID/maps, the mount through map_files). A file
// whose mount is in no namespace's table lies in a detached copy. Without
// the walk (kernels before 6.12) the namespaces are those of processes,
// open nsfs fds and nsfs binds, each table read through a member's
// mountinfo (a namespace no process runs in is listed as unread).
//
// When not to use it: not in the product (mntleak's own reading of the
// kernel is package procfs, with the history the tracer adds; this one
// knows nothing of events, causes or fixes); not to decide what a finding
// should say, only whether what it says is true now; and not for a claim
// about the past (a holder that exited, a copy released since: Check
// reports those as moved, not as agreement). It needs root.
//
// Files:
//   - kernel.go: the namespace walk, listmount, statmount (decoded with
//     length checks), statx of a /proc link.
//   - snapshot.go: Snapshot and Take (namespaces, their tables, every
//     process's files); the fallback without the walk.
//   - mountinfo.go: /proc/PID/mountinfo for the fallback.
//   - answer.go: Target, PathTarget, Answer (printed readably) and
//     Snapshot.Holders.
//   - compare.go: FindingFacts (what a finding claims, built by the
//     caller), Compare/Check against an answer, Unheld for a control.
//
// Tests: oracle_test.go (the import rule, decoding), compare_test.go (the
// comparison rules on made-up answers), oracle_privileged_test.go (real
// kernel state: a loop device in a node, a private copy, a cwd pin, an fd
// in a detached copy, a static program mapped from a copy, namespaces
// kept by an nsfs bind and an open nsfs fd, a tmpfs),
// fallback_privileged_test.go (the fallback agrees with the walk).
package oracle
