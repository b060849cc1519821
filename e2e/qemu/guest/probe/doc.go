// Command probe runs in the lab's guest (guest/kernel-probe.sh) and says,
// one "name: yes|no (why)" line each, which of the mount interfaces that
// differ between the lab's kernels the guest's kernel has: the new mount
// API's syscalls, listmount and statmount (ENOSYS when absent, asked with
// arguments every kernel that has them rejects otherwise), and the
// NS_GET_MNTNS_ID ioctl on its own mount namespace (ENOTTY when absent).
// It asks the kernel directly and shares no code with mntleak. `probe
// excl DEV` opens a block device exclusively, as mkfs does (the arm64
// guest's EBUSY, guest/arm64-init.sh). A test harness, never shipped.
//
// Files: doc.go; main.go (the probes and their lines).
package main
