// Package variants holds the variant matrix: the seed situations built for
// real on this kernel in every combination of how the holder namespace is
// made (unshare, clone(CLONE_NEWNS), setns into it, made before tracing),
// how it holds the copy (a member, a cwd, an open file, a mapping, a root,
// a child left behind) and the propagation it gets (private, slave,
// shared), plus holders that exit just before the failure. Each cell
// asserts the verdict the kernel's behaviour calls for: the cause, the
// process named (pid) and its namespace, or no finding at all for the
// controls where the kernel itself releases the copy.
//
// It has no code of its own: the test starts the tracer and the correlator
// in-process for each cell (privileged; see internal/privtest).
//
// Files:
//   - matrix_privileged_test.go: the cells, their setup and assertions.
//   - detach_privileged_test.go: copies the kernel detaches on rmdir of
//     their mountpoint (no event says so): a later failure never cites one,
//     and a detached copy still pinned is named as such, with its pinner.
//   - shared_privileged_test.go: a mount a Bidirectional pod made into
//     another pod's volume directory: the finding names the namespace and
//     the process that made it, not the kubelet's own namespace.
//   - holder_test.go: TestMain, the clone(CLONE_NEWNS) helper and the
//     mounter helper (a process that mounts and stays).
package variants
