#!/usr/bin/env bash
# e2e/qemu/kernel.sh SUITE DIR: another Debian suite's cloud kernel for the
# lab guest, from Debian's packages only. A small chroot of SUITE (its own
# apt sources: the suite's mirror line, nothing else) installs
# linux-image-cloud-amd64 and initramfs-tools, whose hook makes the
# initramfs (MODULES=most: virtio and ext4 to mount the root); DIR gets
# vmlinuz, initrd, the module tree (modules/VERSION) and the version. The
# bookworm root image is reused: lab.sh writes the module tree into a
# copy of it (rootfs.sh), so only the kernel, its modules and its
# initramfs change between kernels. lab.sh rebuilds DIR when this file
# changes.
set -euo pipefail
suite=$1 D=$2
R=$D/chroot
rm -rf "$D"
mkdir -p "$D"
# In a mount namespace of its own: mmdebstrap mounts /proc, /sys and /dev
# in the chroot while it installs, and in the host's namespace those
# mounts reached the namespaces of other tests' processes (a shared root
# copies them), which kept them after the unmount: the leaks e2e/variants'
# controls then saw (CI, a cold cache, 2026-11-28).
unshare --mount --propagation private \
	mmdebstrap --variant=essential --include=linux-image-cloud-amd64,initramfs-tools,kmod \
	"$suite" "$R" "deb http://deb.debian.org/debian $suite main"
v=$(ls "$R/lib/modules")
[ "$(echo "$v" | wc -l)" = 1 ] || { echo "kernel.sh: $suite installed kernels: $v" >&2; exit 1; }
cp "$R/boot/vmlinuz-$v" "$D/vmlinuz"
cp "$R/boot/initrd.img-$v" "$D/initrd"
mkdir -p "$D/modules"
cp -a "$R/lib/modules/$v" "$D/modules/"
# Only what a booted system reads: no build or source links to headers.
rm -f "$D/modules/$v/build" "$D/modules/$v/source"
echo "$v" >"$D/version"
rm -rf "$R"
