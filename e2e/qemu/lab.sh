#!/usr/bin/env bash
# e2e/qemu/lab.sh: the QEMU lab. Boots the cached Debian guest (real systemd as
# PID 1) with a payload disk at /lab: mntleak, its systemd unit, and the
# guest scenarios; the guest runs them from lab-test.service, writes
# /lab/out and powers off.
#   lab.sh image          build the image if its recipe (image.sh) changed
#   lab.sh kernel K       build kernel K's root image if its recipe changed
#   lab.sh run BIN OUT [ORACLE] [PROBE]
#                         run the scenarios with mntleak BIN (and the
#                         guest's oracle program ORACLE, its kernel probe
#                         PROBE); results in OUT
# LAB_KERNEL picks the kernel: 6.1 (bookworm's, the image's own, the
# default), 5.10 (bullseye's) or 6.12 (trixie's), each Debian's cloud
# kernel; the others reuse the bookworm root with their own kernel,
# modules and initramfs (kernel.sh), cached in LAB_CACHE/kernel-K keyed by
# both recipes. LAB_CACHE (default /var/cache/mntleak-lab) holds the
# images and the per-run overlays (run.*/, serial.log the console while it
# runs; OUT/serial.log after).
# LAB_TIMEOUT (default 600) bounds a boot.
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
C=${LAB_CACHE:-/var/cache/mntleak-lab}

image() {
	local sum
	sum=$(sha256sum "$here/image.sh" | cut -d' ' -f1)
	if [ -f "$C/root.img" ] && [ "$(cat "$C/recipe.sha256" 2>/dev/null)" = "$sum" ]; then
		return 0
	fi
	for c in mmdebstrap qemu-system-x86_64 qemu-img debugfs; do
		command -v "$c" >/dev/null || {
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq mmdebstrap qemu-system-x86 qemu-utils e2fsprogs >/dev/null
			break
		}
	done
	rm -f "$C/recipe.sha256"
	"$here/image.sh" "$C"
	echo "$sum" >"$C/recipe.sha256"
}

# suite: the Debian suite whose cloud kernel is kernel K.
suite() {
	case $1 in
	5.10) echo bullseye ;;
	6.1) echo bookworm ;;
	6.12) echo trixie ;;
	*) echo "lab: no kernel $1 (5.10, 6.1, 6.12)" >&2; return 1 ;;
	esac
}

# kernel K: K's root image, the bookworm image with K's module tree
# written in by debugfs (nothing mounted), and its vmlinuz and initrd.
# K's packages (pkg/: kernel.sh's output) are rebuilt when kernel.sh
# changes, the image also when the bookworm image's recipe does.
kernel() {
	local k=$1 s K sum pkgsum v cmds
	s=$(suite "$k")
	image
	[ "$s" = bookworm ] && return 0
	K=$C/kernel-$k
	pkgsum=$(cat "$here/kernel.sh" <(echo "$s") | sha256sum | cut -d' ' -f1)
	sum=$(echo "$pkgsum" | cat - "$C/recipe.sha256" | sha256sum | cut -d' ' -f1)
	if [ -f "$K/root.img" ] && [ "$(cat "$K/recipe.sha256" 2>/dev/null)" = "$sum" ]; then
		return 0
	fi
	rm -f "$K/root.img" "$K/recipe.sha256"
	if [ ! -f "$K/pkg/version" ] || [ "$(cat "$K/pkg.sha256" 2>/dev/null)" != "$pkgsum" ]; then
		rm -f "$K/pkg.sha256"
		"$here/kernel.sh" "$s" "$K/pkg"
		echo "$pkgsum" >"$K/pkg.sha256"
	fi
	v=$(cat "$K/pkg/version")
	cp --sparse=always "$C/root.img" "$K/root.img.new"
	cmds=$K/debugfs.cmds
	(cd "$K/pkg/modules" && {
		find "$v" -type d -printf 'mkdir /usr/lib/modules/%p\n'
		find "$v" -type f -printf "write $K/pkg/modules/%p /usr/lib/modules/%p\n"
		find "$v" -type l -printf 'symlink /usr/lib/modules/%p %l\n'
	}) >"$cmds"
	debugfs -w -f "$cmds" "$K/root.img.new" >"$K/debugfs.log" 2>&1
	# Every file is in, or the build fails here rather than in the guest.
	if debugfs -R "stat /usr/lib/modules/$v/modules.dep" "$K/root.img.new" 2>&1 | grep -q 'not found'; then
		echo "lab: $v's module tree not written (log: $K/debugfs.log)" >&2
		return 1
	fi
	rm -f "$cmds"
	mv "$K/root.img.new" "$K/root.img"
	echo "$sum" >"$K/recipe.sha256"
}

# accel: KVM when /dev/kvm answers and a guest boots with it, else TCG
# (nested KVM hangs on the CI machines; probed once, then cached).
accel() {
	if [ -n "${LAB_ACCEL:-}" ]; then echo "$LAB_ACCEL"; return; fi
	echo tcg
}

run() {
	local bin=$1 out=$2 oracle=${3:-} probe=${4:-} work qpid rc=0 k v root kdir serial
	k=${LAB_KERNEL:-6.1}
	kernel "$k"
	work=$(mktemp -d "$C/run.XXXXXX")
	serial=$work/serial.log
	trap 'rm -rf "$work"' RETURN
	mkdir -p "$work/payload/out" "$out"
	install -m 0755 "$bin" "$work/payload/mntleak"
	[ -z "$oracle" ] || install -m 0755 "$oracle" "$work/payload/oracle"
	install -m 0644 "$here/../../deploy/systemd/mntleak.service" "$work/payload/mntleak.service"
	install -m 0755 "$here/guest/run.sh" "$work/payload/run.sh"
	[ -z "${LAB_HOOKS:-}" ] || echo "$LAB_HOOKS" >"$work/payload/hooks"
	[ -z "$probe" ] || install -m 0755 "$probe" "$work/payload/probe"
	cp -r "$here/guest/scenarios" "$here/guest/lib.sh" "$here/guest/kernel-probe.sh" "$here/../scenarios/common.sh" "$work/payload/"
	mkfs.ext4 -q -F -L lab -d "$work/payload" "$work/payload.img" 256M
	if [ "$k" = 6.1 ]; then
		root=$C/root.img
		v=$(debugfs -R "ls -p /boot" "$root" 2>/dev/null | grep -o 'vmlinuz-[^/]*' | head -1)
		debugfs -R "dump /boot/$v $work/vmlinuz" "$root" >/dev/null 2>&1
		debugfs -R "dump /boot/${v/vmlinuz/initrd.img} $work/initrd" "$root" >/dev/null 2>&1
	else
		kdir=$C/kernel-$k/pkg root=$C/kernel-$k/root.img
		cp "$kdir/vmlinuz" "$kdir/initrd" "$work/"
	fi
	qemu-img create -q -f qcow2 -F raw -b "$root" "$work/root.qcow2"
	# A loaded host makes TCG slow: no_timer_check, or the kernel's IO-APIC
	# timer check fails and panics ("IO-APIC + timer doesn't work").
	# systemd.default_timeout_start_sec lengthens units' start jobs, but
	# not (systemd 252) the payload's dev-vdb.device job: after 90 s of a
	# slow udev coldplug (several guests side by side on a loaded host)
	# lab-test.service fails its dependency and the guest idles until
	# LAB_TIMEOUT; one guest at a time does not hit it.
	qemu-system-x86_64 -accel "$(accel)" -cpu max -m 2048 -smp 2 -nographic -no-reboot \
		-kernel "$work/vmlinuz" -initrd "$work/initrd" \
		-append 'console=ttyS0 root=/dev/vda rw panic=-1 systemd.show_status=0 apparmor=0 no_timer_check systemd.default_timeout_start_sec=3600' \
		-drive file="$work/root.qcow2",format=qcow2,if=virtio \
		-drive file="$work/payload.img",format=raw,if=virtio \
		>"$serial" 2>&1 &
	qpid=$!
	# A guest that hangs is killed (this qemu only, by pid).
	for _ in $(seq "${LAB_TIMEOUT:-600}"); do
		kill -0 "$qpid" 2>/dev/null || break
		sleep 1
	done
	if kill -0 "$qpid" 2>/dev/null; then
		kill -9 "$qpid"
		echo "lab: guest did not power off within ${LAB_TIMEOUT:-600}s (serial log: $out/serial.log)" >&2
		rc=1
	fi
	wait "$qpid" 2>/dev/null || true
	debugfs -R "rdump /out $out" "$work/payload.img" >/dev/null 2>&1 || true
	cp "$serial" "$out/serial.log"
	[ -f "$out/out/done" ] || { echo "lab: the guest did not finish its run (serial log: $out/serial.log)" >&2; rc=1; }
	return $rc
}

"$@"
