#!/usr/bin/env bash
# Seed 001 (seeds/mountflags-restart.sh) without systemd or Docker: dockerd
# is a fakebin of bash started as a MountFlags=slave unit starts (unshare
# with / made slave); it mounts a container's overlay `merged` (a tmpfs)
# and starts containerd-shim. Restarted, its second generation's umount2 of
# `merged` (a fakebin of umount named dockerd) fails with EINVAL.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
seed mountflags-restart
fakebin dockerd bash
fakebin containerd-shim sleep
mkdir -p "$W/bin/umount.d" && cp "$(command -v umount)" "$W/bin/umount.d/dockerd"

start() {
	OBJECT=$W/docker_rt/overlay2/e5dab77be213/merged
	mkdir -p "$OBJECT"
	bg unshare -m --propagation slave "$W/bin/dockerd" -c "
		mount -t tmpfs overlay $OBJECT &&
		{ $W/bin/containerd-shim 600 & echo \$! > $W/shim.pid; } &&
		touch $W/gen1.ready && wait"
	GEN1=$!
	wait_file "$W/gen1.ready"
	HOLDER=$(cat "$W/shim.pid")
	PIDS+=("$HOLDER")
}
# dockerd restarts (live-restore keeps the shim running)...
restart() { kill -TERM "$GEN1"; wait "$GEN1" 2>/dev/null || true; }
# ...into a new slave namespace, where its first act is the unmount.
unmount() {
	bg unshare -m --propagation slave "$W/bin/dockerd" -c "
		{ sleep 600 & echo \$! > $W/gen2.sleep; } &&
		{ $W/bin/umount.d/dockerd $1; echo \$? > $W/gen2.rc; } &&
		touch $W/gen2.done && wait"
	wait_file "$W/gen2.done"
	PIDS+=("$(cat "$W/gen2.sleep")")
	return "$(cat "$W/gen2.rc")"
}
seed_mountflags_restart start restart unmount
