#!/bin/bash
# What the guest's kernel does where kernels differ, read from the kernel
# itself (not from mntleak), one "key: value" line each; the host test
# asserts each kernel's own answers (lab_kernels_privileged_test.go).
#   rmdir-detaches-foreign: rmdir of a directory that is a mount point
#     only in another mount namespace succeeds and detaches that mount
#     there (yes), or fails with EBUSY (no).
#   syscall NAME: the syscall exists (yes) or answers ENOSYS (no), asked
#     by the guest's probe program with arguments it rejects otherwise.
#   ns-get-mntns-id: the NS_GET_MNTNS_ID ioctl on /proc/self/ns/mnt.
set -u
d=/var/tmp/lab-probe
mkdir -p "$d/dir"
unshare -m --propagation private sh -c "mount -t tmpfs probe $d/dir && touch $d/ready && exec sleep 60" &
holder=$!
for _ in $(seq 50); do [ -e "$d/ready" ] && break; sleep 0.2; done
if rmdir "$d/dir" 2>/dev/null; then
	if grep -q " $d/dir " "/proc/$holder/mountinfo" 2>/dev/null; then
		echo "rmdir-detaches-foreign: no (rmdir succeeded, the mount stays)"
	else
		echo "rmdir-detaches-foreign: yes"
	fi
else
	echo "rmdir-detaches-foreign: no"
fi
kill "$holder"
wait "$holder" 2>/dev/null
rm -rf "$d"
/lab/probe
