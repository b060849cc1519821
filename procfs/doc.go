// Package procfs is what mntleak reads from /proc, behind one interface
// (Proc), so the correlator runs the same way on the live host, in replay
// from a recorded stream, and in tests from hand-built fixtures.
//
// Host reads the real /proc without pinning anything: it reads files and
// stats links, never keeps an fd on an object under a mount point, and the
// process never enters another namespace. One mountinfo read covers a
// whole namespace; a namespace no process runs in (kept by a bind of its
// nsfs file) is read by a thread of its own that enters it and ends
// (CAP_SYS_ADMIN and CAP_SYS_CHROOT), no external program.
// A /dev path its own root lacks (a daemon in a pod has a /dev of its own)
// is looked up in the node's root (nodeview).
//
// Recorder wraps a Proc and writes every answer as a record; Replay answers
// from such records, in order, so `mntleak replay` reproduces what the
// daemon saw.
//
// Files: types.go (Proc, Process, Pin, NamespacePinner, Lister,
// ProcessLister), host.go (the live reader), processes.go (its process
// list, with the kernel's threads and the unreadable apart), mount.go
// (Mount, a table's entry: its ids and a shape the copies of a mount in
// other namespaces share; the shapes' interner), mountinfo.go (a mount
// table parsed with its strings and shapes interned), scan.go (the parallel /proc scan), threads.go (a process's
// threads in namespaces of their own; a process of one thread told by one
// statx), pins.go (who pins a filesystem, with the number and inode of an
// open file, and who could not be read; the pids alone, PIDs), nsfile.go (a
// kept namespace's table by its id, or on an older kernel from a thread
// that enters it), nsid.go (a mount namespace's birth id, and the processes
// holding a namespace's nsfs file open), kernelns.go (KernelNamespaces:
// every mount namespace from the kernel's walk, and any one's table by
// birth id through listmount and statmount, as mountinfo lines;
// TableReader, many processes' mount tables read at once), realpath.go
// (symbolic links in a process's root), visibility.go (how much of the node
// the caller may see, and what a snapshot's process list and tables could
// not read), record.go
// (Recorder, Replay).
package procfs
