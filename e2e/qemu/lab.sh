#!/usr/bin/env bash
# e2e/qemu/lab.sh: the QEMU lab. Boots the cached Debian guest (real systemd as
# PID 1, Debian's 6.1 kernel) with a payload disk at /lab: mntleak, its
# systemd unit, and the guest scenarios; the guest runs them from
# lab-test.service, writes /lab/out and powers off.
#   lab.sh image          build the image if its recipe (image.sh) changed
#   lab.sh run BIN OUT [ORACLE]
#                         run the scenarios with mntleak BIN (and the
#                         guest's oracle program ORACLE); results in OUT
# LAB_CACHE (default /var/cache/mntleak-lab) holds the image, the per-run
# overlay and the serial log. LAB_TIMEOUT (default 600) bounds a boot.
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

# accel: KVM when /dev/kvm answers and a guest boots with it, else TCG
# (nested KVM hangs on the CI machines; probed once, then cached).
accel() {
	if [ -n "${LAB_ACCEL:-}" ]; then echo "$LAB_ACCEL"; return; fi
	echo tcg
}

run() {
	local bin=$1 out=$2 oracle=${3:-} work qpid rc=0 k
	image
	work=$(mktemp -d "$C/run.XXXXXX")
	trap 'rm -rf "$work"' RETURN
	mkdir -p "$work/payload/out" "$out"
	install -m 0755 "$bin" "$work/payload/mntleak"
	[ -z "$oracle" ] || install -m 0755 "$oracle" "$work/payload/oracle"
	install -m 0644 "$here/../../deploy/systemd/mntleak.service" "$work/payload/mntleak.service"
	install -m 0755 "$here/guest/run.sh" "$work/payload/run.sh"
	cp -r "$here/guest/scenarios" "$here/guest/lib.sh" "$here/../scenarios/common.sh" "$work/payload/"
	mkfs.ext4 -q -F -L lab -d "$work/payload" "$work/payload.img" 256M
	qemu-img create -q -f qcow2 -F raw -b "$C/root.img" "$work/root.qcow2"
	k=$(debugfs -R "ls -p /boot" "$C/root.img" 2>/dev/null | grep -o 'vmlinuz-[^/]*' | head -1)
	debugfs -R "dump /boot/$k $work/vmlinuz" "$C/root.img" >/dev/null 2>&1
	debugfs -R "dump /boot/${k/vmlinuz/initrd.img} $work/initrd" "$C/root.img" >/dev/null 2>&1
	qemu-system-x86_64 -accel "$(accel)" -cpu max -m 2048 -smp 2 -nographic -no-reboot \
		-kernel "$work/vmlinuz" -initrd "$work/initrd" \
		-append 'console=ttyS0 root=/dev/vda rw panic=-1 systemd.show_status=0 apparmor=0' \
		-drive file="$work/root.qcow2",format=qcow2,if=virtio \
		-drive file="$work/payload.img",format=raw,if=virtio \
		>"$C/serial.log" 2>&1 &
	qpid=$!
	# A guest that hangs is killed (this qemu only, by pid).
	for _ in $(seq "${LAB_TIMEOUT:-600}"); do
		kill -0 "$qpid" 2>/dev/null || break
		sleep 1
	done
	if kill -0 "$qpid" 2>/dev/null; then
		kill -9 "$qpid"
		echo "lab: guest did not power off within ${LAB_TIMEOUT:-600}s (serial log: $C/serial.log)" >&2
		rc=1
	fi
	wait "$qpid" 2>/dev/null || true
	debugfs -R "rdump /out $out" "$work/payload.img" >/dev/null 2>&1 || true
	cp "$C/serial.log" "$out/serial.log"
	[ -f "$out/out/done" ] || { echo "lab: the guest did not finish its run (serial log: $C/serial.log)" >&2; rc=1; }
	return $rc
}

"$@"
