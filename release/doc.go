// Package release undoes a leak: it detaches the leaked copy of a mount
// inside the namespace that holds it, the precise remedy experienced
// engineers apply by hand (nsenter -t PID -m umount -l PATH) instead of
// restarting the holder or rebooting the node.
//
// Plan turns a finding into steps (one per copy to detach) and refusals
// (a copy the correlator says is not a leak, a namespace's root, a copy
// pinned by a process's cwd, root, open file or mapping — unless forced —,
// or one in the host's or the caller's own namespace). A process holding
// the namespace's nsfs file open pins the namespace, not the copy: the
// plan enters through its fd and it keeps running.
//
// Nothing the finding or the caller says is trusted. Checker.Identify
// binds each step to identities the kernel never reuses (the namespace's
// birth id, NS_GET_MNTNS_ID; the mount's unique id, statmount) and proves
// from live kernel state that the copy is a leak: its filesystem is
// mounted in none of the origins (the host's namespace, the caller's), and
// the holder received it rather than made it — a newer mount of the
// holder is the copy of one its origin had before the holder was made
// (unshare copies the whole tree in one batch of unique ids, in order), or
// the daemon's ledger records the holder's birth and the origin's unmount
// (docs/release.md says why the tables alone cannot always tell). A copy
// not proven is refused, never forced. Checker.Apply, on a locked thread
// that is never the main thread and ends with it (internal/nsthread),
// takes the copy's lock, re-checks the namespace's birth id, proves the
// leak again, enters, checks the top mount at the mount point has the
// planned unique id (statx) and detaches it through that open file, then
// checks it is gone; a release that finds the copy gone says which
// release took it (Record). CheckFinding refuses a finding from before
// this boot or one that differs from what the daemon kept; HolderBorn one
// whose holder was born with another id than the namespace under its inode
// now.
//
// Do not use it on a copy a process works in: detaching it under a running
// database is what --force exists to make explicit.
//
// Files:
//   - plan.go: Step, Refusal, Plan, Make (the per-holder refusals are
//     finding.ReleaseRefusal's, the check behind a finding's command).
//   - kernel.go: Mount, a namespace's table by birth id and
//     NS_GET_MNTNS_ID, from package kmount (listmount, statmount).
//   - prove.go: Table, Proof, NotLeak; proveLeak, the leak proof from
//     the tables of the holder and the origins.
//   - ledger.go: Ledger, the daemon's record of this boot: a namespace's
//     birth and the origin's unmount, as evidence; Generation, a finding's
//     namespace against the live one's birth id.
//   - identity.go: Checker (origins, ledger, verdict), Identify.
//   - apply.go: Checker.Apply, on a locked thread; detachExactly.
//   - acts.go: kernelActs, the kernel calls Identify and Apply act through
//     (open a namespace file, read a table, enter, open the top mount and
//     its unique id, detach through the open file), and liveKernel, the
//     running kernel's; a test gives a fake, so every decision made on
//     their answers is tested without root.
//   - lock.go: one flock per copy under LockDir; Record, what each
//     release of a copy leaves in its lock file; ReleasedMount,
//     ReleasedDevice, the record a release that finds its copy gone
//     quotes.
//   - finding.go: CheckFinding, BootTime (bootTimeIn); HolderBorn, a finding's holder
//     against the live namespace's birth id.
//   - target.go: CopyTarget, the object (and mount point) of a copy named
//     by namespace and mount id, read through a process of it, a bind of
//     its nsfs file or a process holding that file open; BirthID, the live
//     namespace's; both read /proc through procReader (procfs.Host; a
//     test's fake).
package release
