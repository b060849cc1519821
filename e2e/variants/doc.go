// Package variants holds the variant matrix: the seed situations built for
// real on this kernel in every combination of how the holder namespace is
// made (unshare, clone(CLONE_NEWNS), setns into it, made before tracing, a
// slave namespace laid out like a PrivateTmp=yes unit's: its /tmp bound
// from a directory named as systemd names it, made by unshare — no
// systemd runs here; real systemd units are exercised in the lab's guest,
// e2e/qemu/), how it holds the
// copy (a member, a cwd, an open file, a mapping, a root, a child left
// behind, in a user namespace of its own; or no process at all, kept by a
// bind of its nsfs file or by a process holding it open), the propagation
// it gets (private, slave, shared; the copy's own flag against its
// parent's; a parent made private in the holder or on the node), and the
// timing (the holder exits just before the failure, its creator's pid is
// another program's by then, the pinner is forked after tracing began),
// plus churn controls of a healthy node, a FUSE server killed
// without unmounting, a CSI node plugin that mounts a volume twice, a
// runtime in a namespace kept by a bind of its nsfs file, and an agent
// holding a stopped container's rootfs. Each cell lets its teardown
// settle (the leak settle window for a control, then the correlator is
// flushed) and asserts exactly the findings the kernel's behaviour calls
// for about its device, mount point and holder namespace, each whole: the
// cause, the process named (pid, role) and its namespace, the event that
// made the namespace (or that it is inferred), a fix that names the
// process to act on and only live processes the finding holds; and no
// finding at all for the controls where the kernel itself releases the
// copy (TestControlCheckSeesAFalseLeak proves that check can fail).
//
// It has no code of its own: the tests start the tracer and the correlator
// in-process (privileged; see e2e/testkit/privtest).
//
// Files:
//   - matrix_privileged_test.go: the cells, the kernel's verdict for each,
//     and their assertions.
//   - holders_privileged_test.go: how a cell makes and holds its holder
//     namespace; a pid given to another program (ns_last_pid).
//   - churn_privileged_test.go: the churn controls (containers torn down
//     next to a private service, namespace churn, double unmounts, an
//     unmount and rmdir at once).
//   - live_privileged_test.go: the tracer and correlator of a cell, its
//     events prepared as the daemon prepares them (daemon.Sources), and,
//     with MNTLEAK_TEST_RECORD=DIR, recorded to DIR/CELL.jsonl for
//     mntleak replay (settle: wait, stop, flush; caughtUp: wait until a
//     marker call made now has reached the correlator), and the checks of a verdict (the pids a fix
//     names are live holders, e2e/findingset; every finding of the cell agrees with the
//     oracle, e2e/oracle, read as it arrived; a control's volume is held
//     by nothing after it).
//   - expect_privileged_test.go: a cell's objects, the exact findings it
//     expects (exactFindings, through e2e/findingset, which the lab and
//     kubee2e share), and a control's check (noFinding).
//   - control_test.go: the control's check fails on a false leak, also
//     one the correlator reports only when flushed (no root needed).
//   - detach_privileged_test.go: copies the kernel detaches on rmdir of
//     their mountpoint (no event says so): a later failure never cites one,
//     and a detached copy still pinned is named as such, with its pinner.
//   - detachedpin_privileged_test.go: a tmpfs copy that went detached
//     with its holder's namespace, kept by a cwd or a file of a process
//     of the node: the leak names that process.
//   - teardown_privileged_test.go: a teardown that leaves two copies in
//     one namespace is one leak finding naming both.
//   - shared_privileged_test.go: a mount a Bidirectional pod made into
//     another pod's volume directory: the finding names the namespace and
//     the process that made it, not the kubelet's own namespace.
//   - thread_privileged_test.go: a Go program in a holder namespace whose
//     one thread unshares and ends: the process stays named in the leak;
//     a namespace kept by a thread alone (startStayingThread); a thread
//     whose own cwd is in its copy of the volume, its main thread's
//     elsewhere (issue 25): the leak names the process by the thread's
//     cwd; the control: the thread's namespace a slave, its cwd outside.
//   - fuse_privileged_test.go: a FUSE server killed with SIGKILL: the
//     rmdir or busy umount of its dead mount, and the copy a private
//     namespace keeps, each one dead-fuse-daemon finding citing the
//     server's mount and exit; the control unmounts a live server's mount.
//   - csi_privileged_test.go: a CSI node plugin (a copy of mount(8)
//     named csi-node) mounts a loop device at the kubelet's staging path
//     and again at a path of its own (the device, or a bind; in the
//     node's namespace, or in its container's, which publishes only the
//     staging mount); the kubelet's unmount succeeds and mkfs.ext4's
//     exclusive open fails with EBUSY: exactly the double-mount findings.
//   - fuse_server_test.go: the FUSE server helper's variable (the test
//     binary runs e2e/testkit/fuseserve's server).
//   - pinnedruntime_privileged_test.go: a runtime in a namespace kept
//     by a bind of its nsfs file under /run/…/ns (issue 28 item 4), its
//     cells: the runtime a member or pinning the device's mount by its
//     cwd, a file, a mapping, its root, or gone before the failure (the
//     bind alone keeps it), traced or made before tracing (inferred; with
//     no process, unknown); each finding names the bind besides the
//     runtime; the controls: the runtime unmounts first, or the
//     namespace is released (the runtime stops, the bind is unmounted).
//   - rootfsheld_privileged_test.go: a stopped container's rootfs (an
//     overlay the shim mounted at containerd's task bundle) held by an
//     agent on the node (cwd, fd, map, root; traced or from before
//     tracing; the agent gone after the failure): exactly one
//     rootfs-held failure of the shim's unmount; the control: the agent
//     gone first, the unmount succeeds, nothing found (issue 28 item 5).
//   - holder_test.go: TestMain, the clone(CLONE_NEWNS) helper, the
//     mounter helper (a process that mounts and stays) and the thread
//     helper (a Go program whose one locked thread unshares; it may stay
//     there, its root private or a slave, its cwd in a directory given).
package variants
