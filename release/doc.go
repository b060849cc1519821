// Package release undoes a leak: it detaches the leaked copy of a mount
// inside the namespace that holds it, the precise remedy experienced
// engineers apply by hand (nsenter -t PID -m umount -l PATH) instead of
// restarting the holder or rebooting the node.
//
// Plan turns a finding into steps (one per copy to detach) and refusals
// (a copy that is not a leak, is the namespace's root, is pinned by a
// process's cwd, root, open file or mapping — unless forced —, or lives in
// the host's or the caller's own namespace). A process holding the
// namespace's nsfs file open pins the namespace, not the copy: the plan
// enters through its fd and it keeps running. Apply carries one step out
// without moving the calling process: a locked OS thread unshares its
// filesystem context, enters the namespace, re-reads its mount table and
// checks that the planned mount (by id, mount point and device) is still
// there, detaches it with umount2(MNT_DETACH), and checks it is gone. The
// thread (internal/nsthread) is never the main thread and is never
// unlocked, so it ends with its goroutine and nothing of the process stays
// in the namespace.
//
// Do not use it on a copy a process works in: detaching it under a running
// database is what --force exists to make explicit.
//
// Files:
//   - plan.go: Step, Refusal, Plan.
//   - apply.go: Apply, on a locked thread.
//   - target.go: CopyTarget, the object of a copy named by namespace and
//     mount id, read through a process of it, a bind of its nsfs file or a
//     process holding that file open.
package release
