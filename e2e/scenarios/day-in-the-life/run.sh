#!/usr/bin/env bash
# Negative: container churn with no leak. A runtime mounts each container's
# rootfs and shm, the container runs in a slave namespace (so unmounts on
# the node reach its copies) and mounts its own /proc-like tmpfs; three run
# at a time, each copying the others' mounts; then the runtime unmounts and
# removes everything. mntleak must report no leak.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin containerd mount
fakebin runc bash
fakebin app sleep

start() {
	local c=$W/run/c$1
	mkdir -p "$c/rootfs" "$c/shm"
	"$W/bin/containerd" -t tmpfs "rootfs-$1" "$c/rootfs"
	"$W/bin/containerd" -t tmpfs "shm-$1" "$c/shm"
	mkdir -p "$c/rootfs/proc"
	unshare -m --propagation slave "$W/bin/runc" -c "mount -t tmpfs proc-$1 $c/rootfs/proc && $W/bin/app 0.6" &
	echo $! >"$c/pid"
}
stop() {
	local c=$W/run/c$1
	wait "$(cat "$c/pid")" 2>/dev/null || true
	umount "$c/shm" "$c/rootfs"
	rmdir "$c/shm" && rm -rf "$c/rootfs"
}
for i in $(seq 1 20); do
	start "$i"
	sleep 0.2
	[ "$i" -gt 2 ] && stop $((i - 2))
done
stop 19
stop 20
settle
