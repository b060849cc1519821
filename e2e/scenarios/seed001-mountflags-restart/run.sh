#!/usr/bin/env bash
# Seed 001: dockerd under systemd with MountFlags=slave (a slave namespace of
# its own) and live-restore. It mounts a container's overlay `merged` in its
# namespace and starts containerd-shim; dockerd restarts into a new
# namespace; the shim survives in the old one. Removing the container, the
# new dockerd's umount2 of `merged` fails with EINVAL: it is not mounted in
# its namespace, only in the old one the shim keeps alive.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin dockerd bash
fakebin containerd-shim sleep
mkdir -p "$W/bin/umount.d" && cp "$(command -v umount)" "$W/bin/umount.d/dockerd"
merged=$W/docker_rt/overlay2/e5dab77be213/merged
mkdir -p "$merged"

# The first dockerd (systemd: unshare with MountFlags=slave, then exec).
bg unshare -m --propagation slave "$W/bin/dockerd" -c "
	mount -t tmpfs overlay $merged &&
	{ $W/bin/containerd-shim 600 & echo \$! > $W/shim.pid; } &&
	touch $W/gen1.ready && wait"
gen1=$!
wait_file "$W/gen1.ready"
PIDS+=("$(cat "$W/shim.pid")")
expect holder_pid "${PIDS[-1]}"
expect holder_ns "$(nsof "${PIDS[-1]}")"
settle

# dockerd restarts (live-restore keeps the shim running).
kill -TERM "$gen1"; wait "$gen1" 2>/dev/null || true
settle
bg unshare -m --propagation slave "$W/bin/dockerd" -c "
	{ sleep 600 & echo \$! > $W/gen2.sleep; } &&
	{ $W/bin/umount.d/dockerd $merged || true; } &&
	touch $W/gen2.done && wait"
wait_file "$W/gen2.done"
PIDS+=("$(cat "$W/gen2.sleep")")
settle
