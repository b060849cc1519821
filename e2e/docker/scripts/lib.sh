# Shared by the incident scripts (sourced). Each incident runs in a "node"
# mount namespace whose / is rshared, as systemd makes it on a real host
# (this VM's / is private and it has no systemd), with its own Docker Engine
# (Debian's docker.io: dockerd, its containerd and runc) whose data root,
# exec root and socket live under W=/var/lib/mntleak-incidents/<incident>.
# Everything it starts is removed on exit: containers, daemons (by pid),
# loop devices; the node namespace takes its mounts with it.
set -euo pipefail

INCIDENT=$(basename "$0" .sh)
W=/var/lib/mntleak-incidents/$INCIDENT
if [ -z "${MNTLEAK_NODE:-}" ]; then
	export MNTLEAK_NODE=1
	mkdir -p "$W"
	rc=0
	unshare -m --propagation shared "$0" "$@" || rc=$?
	rm -rf "$W"
	rmdir "$(dirname "$W")" 2>/dev/null || true # the last one out
	exit $rc
fi

DK=/usr/bin/docker
export DOCKER_HOST=unix://$W/docker.sock
IMG=mntleak/busybox
DOCKERD=
PIDS=()
LOOPS=()
ZRAMS=()

expect() { if [ -n "${MNTLEAK_EXPECT:-}" ]; then echo "$1=$2" >>"$MNTLEAK_EXPECT"; fi; }
nsof() { readlink "/proc/$1/ns/mnt" | tr -dc 0-9; }
settle() { sleep "${1:-0.5}"; }

# dockerd_start [slave]: start dockerd as systemd would; with "slave", as a
# unit with MountFlags=slave does (a new mount namespace, / made slave).
dockerd_start() {
	local pre=()
	[ "${1:-}" = slave ] && pre=(unshare -m --propagation slave)
	"${pre[@]}" dockerd --data-root "$W/data" --exec-root "$W/exec" -H "$DOCKER_HOST" \
		--pidfile "$W/dockerd.pid" --iptables=false --bridge=none --ip-forward=false --ip-masq=false \
		--storage-driver overlay2 --log-level warn ${DOCKERD_FLAGS:-} >>"$W/dockerd.log" 2>&1 &
	DOCKERD=$!
	for _ in $(seq 120); do
		"$DK" version >/dev/null 2>&1 && return 0
		sleep 0.25
	done
	echo "dockerd did not start" >&2
	tail -5 "$W/dockerd.log" >&2
	return 1
}

# image: a busybox-static image, made with docker import (no registry here).
image() {
	local root=$W/image
	mkdir -p "$root/bin" "$root/etc" "$root/tmp"
	cp "$(command -v busybox)" "$root/bin/busybox"
	for a in $(busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"; done
	tar -C "$root" -c . | "$DK" import --change 'ENV PATH=/bin' - "$IMG" >/dev/null
}

# loopdev SIZE_MIB: an ext4 image on a loop device, in $LOOPDEV.
loopdev() {
	truncate -s "${1}M" "$W/disk.img"
	mkfs.ext4 -q -F "$W/disk.img"
	LOOPDEV=$(losetup --find --show "$W/disk.img")
	LOOPS+=("$LOOPDEV")
	expect device "$LOOPDEV"
}

# zramdev SIZE_MIB: an ext4 filesystem on a fresh zram disk, id in $ZRAMID:
# a stand-in for an rbd device, whose teardown is a sysfs write too.
zramdev() {
	ZRAMID=$(cat /sys/class/zram-control/hot_add)
	ZRAMS+=("$ZRAMID")
	echo "$((${1} << 20))" >"/sys/block/zram$ZRAMID/disksize"
	mkfs.ext4 -q -F "/dev/zram$ZRAMID"
	expect device "/dev/zram$ZRAMID"
}

# release_point [CMD...]: with MNTLEAK_RELEASE set (a directory), the test
# releases the leak now with mntleak release: the script says it is ready,
# waits for the test, then runs CMD, the operation that failed, and records
# whether it succeeds this time (after_release=ok|failed).
release_point() {
	[ -n "${MNTLEAK_RELEASE:-}" ] || return 0
	touch "$MNTLEAK_RELEASE/ready"
	for _ in $(seq 1200); do [ -e "$MNTLEAK_RELEASE/go" ] && break; sleep 0.1; done
	[ -e "$MNTLEAK_RELEASE/go" ] || { echo "the test never released" >&2; return 1; }
	[ $# -gt 0 ] || return 0
	if "$@"; then expect after_release ok; else expect after_release failed; fi
}

# fakebin NAME SOURCE: a copy of SOURCE whose comm is NAME.
fakebin() { mkdir -p "$W/bin" && cp "$(command -v "$2")" "$W/bin/$1"; }

cleanup() {
	set +e
	if [ -n "$DOCKERD" ] && kill -0 "$DOCKERD" 2>/dev/null; then
		ids=$("$DK" ps -aq)
		[ -n "$ids" ] && "$DK" rm -f $ids >/dev/null 2>&1
		kill -TERM "$DOCKERD"
		for _ in $(seq 60); do kill -0 "$DOCKERD" 2>/dev/null || break; sleep 0.25; done
	fi
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	# containerd and shims of this incident's daemons (their command lines
	# name its directories): started by us, killed by pid.
	# Containers whose daemon died before removing them: their root is an
	# overlay from this incident's storage.
	for d in /proc/[0-9]*; do
		if grep -qsF "$W" "$d/cmdline" || awk '$5 == "/"' "$d/mountinfo" 2>/dev/null | grep -qF "$W/data/overlay2"; then
			kill -9 "${d#/proc/}" 2>/dev/null
		fi
	done
	for l in "${LOOPS[@]}"; do
		for _ in $(seq 50); do losetup -d "$l" 2>/dev/null && break; sleep 0.1; done
	done
	for z in "${ZRAMS[@]}"; do
		for _ in $(seq 50); do
			[ -e "/sys/block/zram$z" ] || break # removed by the script
			{ echo 1 >"/sys/block/zram$z/reset" && echo "$z" >/sys/class/zram-control/hot_remove; } 2>/dev/null && break
			sleep 0.1
		done
	done
}
trap cleanup EXIT
