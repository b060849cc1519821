# Shared by the scenario scripts (sourced). Each scenario:
#  - runs inside a "node" mount namespace whose / is made rshared, as
#    systemd does on a real host (this VM's / is private, no systemd);
#  - works under W=/var/lib/mntleak-scenarios/<name>, a stable path so the
#    recorded streams and golden findings do not change between runs;
#  - gives its actors distinctive names (dockerd, runc, containerd-shim,
#    node_exporter...) by running copies of bash, mount and sleep;
#  - cleans up on exit: kills what it started (by pid), detaches loop
#    devices; the node namespace and all its mounts go with its processes.
set -euo pipefail

SCENARIO=$(basename "$(dirname "$(readlink -f "$0")")")
W=/var/lib/mntleak-scenarios/$SCENARIO

if [ -z "${MNTLEAK_NODE:-}" ]; then
	export MNTLEAK_NODE=1
	mkdir -p "$W"
	# The node namespace: everything below happens in it.
	unshare -m --propagation shared "$0" "$@"
	rc=$?
	rm -rf "$W"
	rmdir "$(dirname "$W")" 2>/dev/null || true # the last one out
	exit $rc
fi

PIDS=()
LOOPS=()
ZRAMS=()
cleanup() {
	set +e
	# Under the end-to-end test, the state is kept a moment for the oracle
	# to check the last findings against it (MNTLEAK_HOLD seconds).
	sleep "${MNTLEAK_HOLD:-0}"
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill -9 "${PIDS[i]}" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	# Namespaces die with their processes; give the kernel a moment to
	# release the filesystems before detaching their devices.
	for l in "${LOOPS[@]}"; do
		for _ in $(seq 50); do losetup -d "$l" 2>/dev/null && break; sleep 0.1; done
	done
	for z in "${ZRAMS[@]}"; do
		for _ in $(seq 50); do
			{ echo 1 >"/sys/block/zram$z/reset" && echo "$z" >/sys/class/zram-control/hot_remove; } 2>/dev/null && break
			sleep 0.1
		done
	done
}
trap cleanup EXIT

mkdir -p "$W/bin"
# fakebin NAME SOURCE: a copy of SOURCE whose comm is NAME.
fakebin() { cp "$(command -v "$2")" "$W/bin/$1"; }

# bg CMD...: start in the background and remember the pid for cleanup.
bg() { "$@" & PIDS+=($!); }

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

# expect KEY VALUE: tells the end-to-end test (MNTLEAK_EXPECT names a file)
# what the finding must name: holder_pid, holder_ns.
expect() { if [ -n "${MNTLEAK_EXPECT:-}" ]; then echo "$1=$2" >>"$MNTLEAK_EXPECT"; fi; }

# nsof PID: the inode of PID's mount namespace.
nsof() { readlink "/proc/$1/ns/mnt" | tr -dc 0-9; }
expect node_ns "$(nsof $$)"

# settle: let the tracer see the events in order before the next step.
settle() { sleep "${1:-0.3}"; }

# wait_file PATH: wait until a background actor signals readiness.
wait_file() { for _ in $(seq 100); do [ -e "$1" ] && return 0; sleep 0.05; done; echo "timeout waiting for $1" >&2; return 1; }
