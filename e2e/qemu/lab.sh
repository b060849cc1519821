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
#   lab.sh exec SCRIPT OUT [FILE...]
#                         boot with SCRIPT as the payload's run.sh and the
#                         FILEs beside it (guest/hooks.sh: the hook paths'
#                         start-up, TestHooksSameEvents, hookbench); SCRIPT
#                         writes /lab/out/done and powers off; results in OUT
#   lab.sh bench IN OUT   boot with guest/bench.sh: IN/hookbench IN/mntleak
#                         (IN/hookbench.rounds rounds) and bpftrace,
#                         its packages downloaded (bpftrace_debs);
#                         results in OUT
# LAB_KERNEL picks the kernel: 6.1 (bookworm's, the image's own, the
# default), 5.10 (bullseye's) or 6.12 (trixie's), each Debian's cloud
# kernel; the others reuse the bookworm root with their own kernel,
# modules and initramfs (kernel.sh), cached in LAB_CACHE/kernel-K keyed by
# both recipes. LAB_CACHE (default /var/cache/mntleak-lab) holds the
# images and the per-run overlays (run.*/, serial.log the console while it
# runs; OUT/serial.log after).
# LAB_TIMEOUT bounds a boot: 600 s by default, 2400 s with LAB_HOOKS=both
# (every scenario twice, and the trampoline path's start under TCG) and for
# lab.sh exec (guest/hooks.sh starts that path twice and runs a test that
# starts it once more).
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
C=${LAB_CACHE:-/var/cache/mntleak-lab}
# A fresh machine has none: run's and exec_'s mktemp come before image
# makes it (a cold make test failed there on a day without arm64, whose
# test had made it first).
mkdir -p "$C"

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

# accel: TCG with one thread for both vCPUs (LAB_ACCEL overrides; nested
# KVM hangs on the CI machines). Multi-threaded TCG ran a vCPU through a
# stale translation of a jump label the other had just patched: every
# daemon start attaches the sys_exit tracepoint, whose static key the
# kernel patches with text_poke_bp's int3, and the 6.12 guest died once
# of "Oops: int3" in syscall_exit_to_user_mode_prepare (CI, 2026-11-27;
# the 5.10 guest's lockup, docs/BENCHMARKS.md, is the same race). One
# thread runs the vCPUs in turns, so no vCPU runs code another is
# rewriting; the lab takes about a minute more (297 s against 234 s for
# 6.1 and 6.12).
accel() {
	if [ -n "${LAB_ACCEL:-}" ]; then echo "$LAB_ACCEL"; return; fi
	echo tcg,thread=single
}

run() {
	local bin=$1 out=$2 oracle=${3:-} probe=${4:-} work
	work=$(mktemp -d "$C/run.XXXXXX")
	trap 'rm -rf "$work"; trap - RETURN' RETURN
	mkdir -p "$work/payload/out"
	install -m 0755 "$bin" "$work/payload/mntleak"
	[ -z "$oracle" ] || install -m 0755 "$oracle" "$work/payload/oracle"
	install -m 0644 "$here/../../deploy/systemd/mntleak.service" "$work/payload/mntleak.service"
	install -m 0755 "$here/guest/run.sh" "$work/payload/run.sh"
	[ -z "${LAB_HOOKS:-}" ] || echo "$LAB_HOOKS" >"$work/payload/hooks"
	[ -z "$probe" ] || install -m 0755 "$probe" "$work/payload/probe"
	cp -r "$here/guest/scenarios" "$here/guest/lib.sh" "$here/guest/kernel-probe.sh" "$here/../scenarios/common.sh" "$here/../scenarios/seeds" "$work/payload/"
	local timeout=${LAB_TIMEOUT:-600}
	[ "${LAB_HOOKS:-}" != both ] || timeout=${LAB_TIMEOUT:-2400}
	# Not a bare boot: under set -e its failure would leave before the
	# RETURN trap removes WORK.
	boot "$work" "$out" "$timeout" || return
}

# exec SCRIPT OUT FILE...: a payload of SCRIPT (as run.sh) and FILEs.
exec_() {
	local script=$1 out=$2 work
	shift 2
	work=$(mktemp -d "$C/run.XXXXXX")
	trap 'rm -rf "$work"; trap - RETURN' RETURN
	mkdir -p "$work/payload/out"
	install -m 0755 "$script" "$work/payload/run.sh"
	[ $# -eq 0 ] || cp -r "$@" "$work/payload/"
	boot "$work" "$out" "${LAB_TIMEOUT:-2400}" || return
}

# bpftrace_debs DIR: Debian's bpftrace and every package of its
# dependencies that the image lacks (its dpkg status read with debugfs),
# downloaded by apt into DIR/debs once (the image's and the host's suite are
# both bookworm); DIR is remade when the image changes.
bpftrace_debs() {
	local d=$1 have
	image
	if [ -f "$d/recipe.sha256" ] && cmp -s "$d/recipe.sha256" "$C/recipe.sha256"; then
		return 0
	fi
	rm -rf "$d" && mkdir -p "$d/debs"
	have=$(debugfs -R "cat /var/lib/dpkg/status" "$C/root.img" 2>/dev/null |
		awk '/^Package:/ { p = $2 } /^Status: install ok installed/ { print p }' | sort -u)
	apt-cache depends --recurse --no-recommends --no-suggests --no-conflicts --no-breaks \
		--no-replaces --no-enhances bpftrace | grep -v '^[ <]' | sort -u |
		comm -23 - <(echo "$have") >"$d/packages"
	(cd "$d/debs" && xargs apt-get download -q <../packages) >"$d/download.log" 2>&1 || {
		echo "lab: apt-get download of bpftrace's packages failed (log: $d/download.log)" >&2
		return 1
	}
	cp "$C/recipe.sha256" "$d/recipe.sha256"
}

# bench IN OUT: guest/bench.sh with IN's hookbench, mntleak and rounds, and
# bpftrace's packages.
bench() {
	local in=$1 out=$2
	bpftrace_debs "$C/bpftrace-debs"
	exec_ "$here/guest/bench.sh" "$out" "$in/mntleak" "$in/hookbench" "$in/hookbench.rounds" "$C/bpftrace-debs/debs"
}

# payload_device_wait WORK: appends to WORK/initrd a /conf/param.conf,
# which initramfs-tools' init sources after each of its scripts (their
# ORDER files say so), the last time with /run mounted just before it
# moves /run into the root: it writes a drop-in that lets systemd wait for
# the payload's device (dev-vdb.device, /lab in the image's fstab) without
# a limit. Without it the job times out after 90 s (systemd 252 does not
# apply systemd.default_timeout_start_sec to it): on a loaded host the
# coldplug under TCG takes longer (seen at load 28 with one guest alone:
# 98 s), lab-test.service fails its dependency and the run is lost.
payload_device_wait() {
	local d=$1/initrd-lab
	mkdir -p "$d/conf"
	cat >"$d/conf/param.conf" <<'P'
if [ -d /run ] && [ ! -e /run/systemd/system/dev-vdb.device.d/lab.conf ]; then
	mkdir -p /run/systemd/system/dev-vdb.device.d
	printf '[Unit]\nJobRunningTimeoutSec=infinity\n' >/run/systemd/system/dev-vdb.device.d/lab.conf
fi
P
	# The kernel reads an uncompressed archive after a compressed one only
	# at an offset that is a multiple of 4 (it skips the zeros).
	truncate -s %512 "$1/initrd"
	(cd "$d" && find . | busybox cpio -o -H newc 2>/dev/null) >>"$1/initrd"
}

# boot WORK OUT: LAB_KERNEL's guest with WORK/payload at /lab until it
# powers off (or LAB_TIMEOUT), its /lab/out and console copied to OUT.
boot() {
	local work=$1 out=$2 timeout=$3 qpid rc=0 k v root kdir serial
	k=${LAB_KERNEL:-6.1}
	kernel "$k"
	serial=$work/serial.log
	mkdir -p "$out"
	mkfs.ext4 -q -F -L lab -d "$work/payload" "$work/payload.img" 512M
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
	payload_device_wait "$work"
	# A loaded host makes TCG slow: no_timer_check, or the kernel's IO-APIC
	# timer check fails and panics ("IO-APIC + timer doesn't work").
	qemu-system-x86_64 -accel "$(accel)" -cpu max -m 2048 -smp 2 -nographic -no-reboot \
		-kernel "$work/vmlinuz" -initrd "$work/initrd" \
		-append 'console=ttyS0 root=/dev/vda rw panic=-1 systemd.show_status=0 apparmor=0 no_timer_check systemd.default_timeout_start_sec=3600' \
		-drive file="$work/root.qcow2",format=qcow2,if=virtio \
		-drive file="$work/payload.img",format=raw,if=virtio \
		>"$serial" 2>&1 &
	qpid=$!
	# A guest that hangs is killed (this qemu only, by pid), and one whose
	# run cannot start at once.
	for _ in $(seq "$timeout"); do
		kill -0 "$qpid" 2>/dev/null || break
		if grep -q 'Dependency failed for lab-test.service' "$serial"; then
			echo "lab: the guest's lab-test.service failed a dependency (serial log: $out/serial.log)" >&2
			break
		fi
		sleep 1
	done
	if kill -0 "$qpid" 2>/dev/null; then
		kill -9 "$qpid"
		echo "lab: guest did not power off within ${timeout}s (serial log: $out/serial.log)" >&2
		rc=1
	fi
	wait "$qpid" 2>/dev/null || true
	debugfs -R "rdump /out $out" "$work/payload.img" >/dev/null 2>&1 || true
	cp "$serial" "$out/serial.log"
	[ -f "$out/out/done" ] || { echo "lab: the guest did not finish its run (serial log: $out/serial.log)" >&2; rc=1; }
	return $rc
}

case ${1:-} in
exec) shift; exec_ "$@" ;;
*) "$@" ;;
esac
