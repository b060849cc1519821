// Package qemu runs mntleak on a second kernel with real systemd: a QEMU
// guest (Debian bookworm, systemd as PID 1, Debian's 6.1 cloud kernel with
// device-mapper, kprobes and fentry) booted on this machine, TCG when KVM is
// not usable. The guest installs mntleak with its own unit from deploy/,
// runs the seed scenarios that need what the host lacks (a real
// docker.service restarted by systemd under MountFlags=slave, a real
// PrivateTmp=yes unit, dmsetup remove), saves mntleak's journal entries and
// powers off; the test asserts on the findings read back from its disk:
// the exact set of findings about each scenario's objects within its
// window (e2e/findingset), and the oracle's comparison of every finding,
// made in the guest the moment it was logged (guest/oracle, e2e/oracle on
// Debian's 6.1: no namespace walk, the namespaces of processes, open nsfs
// fds and nsfs binds read through /proc).
//
// The image is built once and cached outside the repo
// (/var/cache/mntleak-lab, LAB_CACHE), rebuilt when image.sh changes; each
// run boots a copy-on-write overlay of it and a payload disk, so nothing on
// the host is mounted and nothing is left behind but the cache.
//
// Files:
//   - image.sh: the guest image (mmdebstrap + mkfs.ext4 -d).
//   - lab.sh: image (build when stale) and run (payload disk, boot,
//     timeout, results read back with debugfs).
//   - guest/run.sh: lab-test.service in the guest (each scenario's
//     window; the oracle following mntleak's journal); guest/oracle: the
//     guest's oracle program (one oraclecheck.Verdict a finding; its
//     own doc.go); guest/lib.sh (on
//     e2e/scenarios/common.sh, which lab.sh copies into the payload) and
//     guest/scenarios/*.sh: the scenarios, each recording what the test
//     must find (NAME.expect).
//   - lab_privileged_test.go: TestLabGuest, the assertions per scenario.
package qemu
