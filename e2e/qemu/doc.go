// Package qemu runs mntleak on other kernels with real systemd: a QEMU
// guest (Debian bookworm, systemd as PID 1, device-mapper) for each of
// Debian's 5.10, 6.1 and 6.12 cloud kernels (bullseye's, bookworm's,
// trixie's), booted on this machine in turn, TCG when KVM is not usable
// (docs/lab.md: how each is built, where the kernels differ, the
// results). The guest installs mntleak with its own unit from deploy/,
// runs the seed scenarios that need what the host lacks (a real
// docker.service restarted by systemd under MountFlags=slave, a real
// PrivateTmp=yes unit, dmsetup remove), saves mntleak's journal entries and
// powers off; the test asserts on the findings read back from its disk:
// the exact set of findings about each scenario's objects within its
// window (e2e/findingset), and the oracle's comparison of every finding,
// made in the guest the moment it was logged (guest/oracle, e2e/oracle
// without a namespace walk: the namespaces of processes, open nsfs fds and
// nsfs binds read through /proc). Each guest also prints `mntleak version`
// and its kernel's own answers where the kernels differ (guest/probe),
// asserted per kernel; one scenario runs the daemon with --buffer=perf.
//
// The bookworm image is built once and cached outside the repo
// (/var/cache/mntleak-lab, LAB_CACHE), rebuilt when image.sh changes; the
// 5.10 and 6.12 images beside it (kernel-K/) are copies of it with their
// kernel's module tree written in, keyed by kernel.sh, image.sh's hash and
// the suite. Each run boots a copy-on-write overlay and a payload disk, so
// nothing on the host is mounted and nothing is left behind but the cache.
//
// Files:
//   - image.sh: the bookworm image (mmdebstrap + mkfs.ext4 -d).
//   - kernel.sh: another suite's cloud kernel, initramfs and modules
//     (mmdebstrap of that suite).
//   - lab.sh: image and kernel (build when stale), run (payload disk,
//     boot, timeout, results read back with debugfs) and exec (the same
//     boot with another script as the guest's run.sh), bench (make
//     lab-bench: guest/bench.sh with hookbench, and bpftrace's Debian
//     packages, downloaded once, installed in the guest).
//   - arm64.sh: the arm64 guest (Debian's arm64 cloud kernel under
//     qemu-system-aarch64, an initramfs of busybox and the static arm64
//     mntleak); guest/arm64-init.sh: its /init (a leak and its EBUSY,
//     results printed on the console).
//   - guest/run.sh: lab-test.service in the guest (each scenario's
//     window, its daemon arguments; the oracle following mntleak's
//     journal); guest/oracle: the guest's oracle program (one
//     oraclecheck.Verdict a finding; its own doc.go);
//     guest/kernel-probe.sh and guest/probe: the kernel's own answers
//     (rmdir, the new mount API, listmount, NS_GET_MNTNS_ID; its own
//     doc.go); guest/hookbench: what each hook path costs the
//     syscalls it does not trace, measured in the guest (its own doc.go);
//     guest/hooks.sh: lab-test.service for lab.sh exec, the hook paths'
//     start-up, tracer's TestHooksSameEvents and hookbench;
//     guest/bench.sh: lab-test.service for lab.sh bench (bpftrace
//     installed, then hookbench);
//     guest/lib.sh (on
//     e2e/scenarios/common.sh, which lab.sh copies into the payload with
//     the seeds' stories, e2e/scenarios/seeds) and guest/scenarios/*.sh:
//     the scenarios, each a seed's story told with real systemd units,
//     recording what the test must find (NAME.expect).
//   - lab_privileged_test.go: TestLabGuest, a guest a kernel, the
//     assertions per scenario. Each kernel's last run stays in bin/lab/K;
//     LAB_RECHECK=1 checks it again without a boot.
//   - lab_hooks_privileged_test.go: TestLabHooks (make lab), each x86
//     kernel booted with guest/hooks.sh: both hook paths start, and
//     TestHooksSameEvents passes where the kernel has trampolines.
//   - lab_arm64_privileged_test.go: TestLabArm64, the arm64 guest's
//     objects loaded and its findings.
//   - lab_expect_test.go: a scenario's NAME.expect read (a holder given
//     two values, two runs in one file, refused).
//   - lab_kernels_test.go: the kernels (LAB_KERNELS), what each must show.
//   - lab_results_test.go: the results table (bin/lab-results.md; with
//     -update, docs/lab.md's blocks).
package qemu
