# The one library every script that makes a seed happen shares (sourced by
# e2e/scenarios/lib.sh, e2e/docker/scripts/lib.sh and, copied into the
# guest, e2e/qemu/guest/lib.sh). Each of those sets W, the script's work
# directory, starts its node (a node namespace, a Docker Engine, the
# guest's systemd) and cleans up what the lists below name; the helpers
# here make the objects and tell the test what to expect. Each seed's
# story is scripted once, in seeds/<seed>.sh beside this file (sourced
# with seed NAME), and told by every harness with its own holders.
#   MNTLEAK_EXPECT  the file expect writes KEY=VALUE lines to (none: quiet)
#   SETTLE          settle's default pause in seconds (0.3)
#   DK, IMG         the docker client and the busybox image's name (image)

SEEDS=$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/seeds

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

# seed NAME: source the seed's story, seeds/NAME.sh.
seed() { source "$SEEDS/$1.sh"; }

# must_fail CMD...: run CMD, the operation the seed's leak makes fail; its
# success fails the script.
must_fail() {
	if "$@" 2>/dev/null; then
		echo "$* unexpectedly succeeded" >&2
		exit 1
	fi
}

# expect_holder PID: the finding must name PID and its mount namespace.
expect_holder() {
	expect holder_pid "$1"
	expect holder_ns "$(nsof "$1")"
}

# loopdev SIZE_MIB [KEY]: an ext4 image on a fresh loop device, left in
# $LOOPDEV (not printed: a $(...) subshell would lose it from the cleanup
# list) and expected as KEY (device; device2 for a second one: its image
# is disk2.img).
loopdev() {
	local key=${2:-device}
	local img=$W/disk${key#device}.img
	truncate -s "${1}M" "$img"
	mkfs.ext4 -q -F "$img"
	LOOPDEV=$(losetup --find --show "$img")
	LOOPS+=("$LOOPDEV")
	expect "$key" "$LOOPDEV"
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

# mntns_pinned DIR: a mount namespace no process runs in, kept alive by a
# bind of its nsfs file at DIR/mnt (unshare --mount=FILE); expected as
# holder_ns. The bind of an nsfs file must not sit on a shared mount: DIR
# is made a private bind of itself.
mntns_pinned() {
	mkdir -p "$1"
	mount --bind "$1" "$1"
	mount --make-private "$1"
	touch "$1/mnt"
	# The kernel binds it only into a namespace with a smaller id, and ids
	# come in per-CPU batches: made on the CPU that made the node's, it
	# always is.
	for cpu in $(seq 0 $(($(nproc) - 1))); do
		taskset -c "$cpu" unshare --mount="$1/mnt" --propagation private true 2>/dev/null && break
	done
	expect holder_ns "$(stat -L -c %i "$1/mnt")"
}

# rbind_container DIR COMM: a container as runc makes one for a hostPath
# of / without propagation (mountPropagation None): a mount namespace of
# its own, / bound recursively at DIR and made rprivate by $W/bin/runc (a
# fakebin of mount), then $W/bin/COMM runs in it; its pid in HOLDER.
rbind_container() {
	bg unshare -m --propagation unchanged sh -c "
	$W/bin/runc --rbind / $1 &&
	$W/bin/runc --make-rprivate $1 &&
	touch $W/$2.ready && exec $W/bin/$2 600"
	wait_file "$W/$2.ready"
	HOLDER=${PIDS[-1]}
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
