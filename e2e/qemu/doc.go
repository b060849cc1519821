// Package qemu runs mntleak on a second kernel with real systemd: a QEMU
// guest (Debian bookworm, systemd as PID 1, Debian's 6.1 cloud kernel with
// device-mapper, kprobes and fentry) booted on this machine, TCG when KVM is
// not usable. The guest installs mntleak with its own unit from deploy/,
// runs the seed scenarios that need what the host lacks (a real
// docker.service restarted by systemd under MountFlags=slave, a real
// PrivateTmp=yes unit, dmsetup remove), saves mntleak's journal entries and
// powers off; the test asserts on the findings read back from its disk.
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
//   - guest/run.sh: lab-test.service in the guest; guest/lib.sh (on
//     e2e/scenarios/common.sh, which lab.sh copies into the payload) and
//     guest/scenarios/*.sh: the scenarios, each recording what the test
//     must find (NAME.expect).
//   - lab_privileged_test.go: TestLabGuest, the assertions per scenario.
package qemu
