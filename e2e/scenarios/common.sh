# The one library every script that makes a seed happen shares (sourced by
# e2e/scenarios/lib.sh, e2e/docker/scripts/lib.sh and, copied into the
# guest, e2e/qemu/guest/lib.sh). Each of those sets W, the script's work
# directory, starts its node (a node namespace, a Docker Engine, the
# guest's systemd) and cleans up what the lists below name; the helpers
# here make the objects and tell the test what to expect.
#   MNTLEAK_EXPECT  the file expect writes KEY=VALUE lines to (none: quiet)
#   SETTLE          settle's default pause in seconds (0.3)
#   DK, IMG         the docker client and the busybox image's name (image)

PIDS=()  # started in the background (bg): killed at cleanup, by pid
LOOPS=() # loop devices (loopdev): detached at cleanup
ZRAMS=() # zram disks (zramdev): reset and removed at cleanup

# expect KEY VALUE: tells the test what the finding must name (holder_pid,
# holder_ns, device, unit...).
expect() { if [ -n "${MNTLEAK_EXPECT:-}" ]; then echo "$1=$2" >>"$MNTLEAK_EXPECT"; fi; }

# nsof PID: the inode of PID's mount namespace.
nsof() { readlink "/proc/$1/ns/mnt" | tr -dc 0-9; }

# settle [SECONDS]: let the tracer see the events in order before the next step.
settle() { sleep "${1:-${SETTLE:-0.3}}"; }

# wait_file PATH: wait until a background actor signals readiness.
wait_file() { for _ in $(seq 100); do [ -e "$1" ] && return 0; sleep 0.05; done; echo "timeout waiting for $1" >&2; return 1; }

# bg CMD...: start in the background and remember the pid for cleanup.
bg() { "$@" & PIDS+=($!); }

# fakebin NAME SOURCE: a copy of SOURCE whose comm is NAME, in $W/bin.
fakebin() { mkdir -p "$W/bin" && cp "$(command -v "$2")" "$W/bin/$1"; }

# loopdev SIZE_MIB: an ext4 image on a fresh loop device, left in $LOOPDEV
# (not printed: a $(...) subshell would lose it from the cleanup list).
loopdev() {
	truncate -s "${1}M" "$W/disk.img"
	mkfs.ext4 -q -F "$W/disk.img"
	LOOPDEV=$(losetup --find --show "$W/disk.img")
	LOOPS+=("$LOOPDEV")
	expect device "$LOOPDEV"
}

# zramdev SIZE_MIB: an ext4 filesystem on a fresh zram disk (a stand-in for
# an rbd device: its teardown is a sysfs write too); its id in $ZRAMID.
zramdev() {
	ZRAMID=$(cat /sys/class/zram-control/hot_add)
	ZRAMS+=("$ZRAMID")
	echo "$((${1} << 20))" >"/sys/block/zram$ZRAMID/disksize"
	mkfs.ext4 -q -F "/dev/zram$ZRAMID"
	expect device "/dev/zram$ZRAMID"
}

# image: a busybox-static image as $IMG, made with docker import (there is
# no registry), unless the engine has it already.
image() {
	"${DK:-docker}" image inspect "$IMG" >/dev/null 2>&1 && return 0
	local root=$W/image
	mkdir -p "$root/bin" "$root/etc" "$root/tmp"
	cp "$(command -v busybox)" "$root/bin/busybox"
	for a in $(busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"; done
	tar -C "$root" -c . | "${DK:-docker}" import --change 'ENV PATH=/bin' - "$IMG" >/dev/null
	rm -rf "$root"
}
