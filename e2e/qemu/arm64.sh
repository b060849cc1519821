#!/usr/bin/env bash
# e2e/qemu/arm64.sh: the lab's arm64 guest, under qemu-system-aarch64 (TCG).
# No root filesystem: Debian bookworm's arm64 cloud kernel boots an
# initramfs of busybox (busybox-static:arm64), the loop module, the static
# arm64 mntleak and probe, and guest/arm64-init.sh as /init, which runs
# mntleak's daemon and one leak with its EBUSY, prints its results
# between markers on the serial console and powers off.
#   arm64.sh image                build the kernel and the initramfs's base
#                                 if this recipe changed
#   arm64.sh run BIN PROBE OUT    boot with mntleak BIN and PROBE (both
#                                 GOARCH=arm64, static); OUT/serial.log
# Cached in LAB_CACHE/arm64 (default /var/cache/mntleak-lab/arm64), keyed
# by the hash of image's definition; LAB_TIMEOUT (default 900) bounds a boot.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
C=${LAB_CACHE:-/var/cache/mntleak-lab}/arm64

image() {
	local sum R v
	sum=$(declare -f image | sha256sum | cut -d' ' -f1)
	if [ -f "$C/base.cpio" ] && [ "$(cat "$C/recipe.sha256" 2>/dev/null)" = "$sum" ]; then
		return 0
	fi
	command -v qemu-system-aarch64 >/dev/null || {
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq qemu-system-arm >/dev/null
	}
	rm -rf "$C"
	mkdir -p "$C"
	R=$C/debs
	# extract: the packages' files only, no maintainer script (they are
	# arm64 binaries this machine cannot run).
	mmdebstrap --variant=extract --architectures=arm64 --include=linux-image-cloud-arm64,busybox-static \
		bookworm "$R" "deb http://deb.debian.org/debian bookworm main"
	v=$(ls "$R/lib/modules")
	cp "$R/boot/vmlinuz-$v" "$C/vmlinuz"
	mkdir -p "$C/base/bin" "$C/base/lib"
	cp "$R/bin/busybox" "$C/base/bin/busybox"
	cp "$R/lib/modules/$v/kernel/drivers/block/loop.ko" "$C/base/lib/loop.ko"
	(cd "$C/base" && find . | busybox cpio -o -H newc 2>/dev/null) >"$C/base.cpio"
	echo "$v" >"$C/version"
	rm -rf "$R" "$C/base"
	echo "$sum" >"$C/recipe.sha256"
}

run() {
	local bin=$1 probe=$2 out=$3 work qpid rc=0
	image
	work=$(mktemp -d "$C/run.XXXXXX")
	trap 'rm -rf "$work"' RETURN
	mkdir -p "$work/payload" "$out"
	install -m 0755 "$bin" "$work/payload/mntleak"
	install -m 0755 "$probe" "$work/payload/probe"
	install -m 0755 "$here/guest/arm64-init.sh" "$work/payload/init"
	(cd "$work/payload" && find . | busybox cpio -o -H newc 2>/dev/null) | cat "$C/base.cpio" - >"$work/initrd"
	qemu-system-aarch64 -M virt -cpu cortex-a72 -m 2048 -smp 2 -nographic -no-reboot \
		-kernel "$C/vmlinuz" -initrd "$work/initrd" \
		-append 'console=ttyAMA0 panic=-1 rdinit=/init' \
		>"$out/serial.log" 2>&1 &
	qpid=$!
	# A guest that hangs is killed (this qemu only, by pid).
	local deadline=$((SECONDS + ${LAB_TIMEOUT:-900}))
	while kill -0 "$qpid" 2>/dev/null && [ "$SECONDS" -lt "$deadline" ]; do
		sleep 1
	done
	if kill -0 "$qpid" 2>/dev/null; then
		kill -9 "$qpid"
		echo "arm64: guest did not power off within ${LAB_TIMEOUT:-900}s" >&2
		rc=1
	fi
	wait "$qpid" 2>/dev/null || true
	grep -q '^==> done' "$out/serial.log" || { echo "arm64: the guest did not finish its run" >&2; rc=1; }
	return $rc
}

"$@"
