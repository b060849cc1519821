#!/usr/bin/env bash
# A daemon makes its storage root private (older docker did so for its graph
# directory) and mounts a container's rootfs below it; a later namespace
# (here an sshd-like service) copies it, and since the parent was private its
# copy of `merged` receives no unmount: the container's removal leaks it.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin dockerd mount
fakebin sshd sleep

mkdir -p "$W/docker"
"$W/bin/dockerd" --bind "$W/docker" "$W/docker"
"$W/bin/dockerd" --make-private "$W/docker"
merged=$W/docker/overlay2/9a1b2c3d/merged
mkdir -p "$merged"
"$W/bin/dockerd" -t tmpfs overlay "$merged"
settle
bg unshare -m --propagation unchanged sh -c "touch $W/sshd.ready && exec $W/bin/sshd 600"
wait_file "$W/sshd.ready"
expect holder_pid "${PIDS[-1]}"
expect holder_ns "$(nsof "${PIDS[-1]}")"
settle
umount "$merged"
settle
# mntleak reports a leak once the teardown has settled (2 s), on the next
# event after that (this sleep's exit): the holder outlives that by a
# second, so that its /proc is read before the cleanup kills it (else the
# leak is reported without its holder, which had exited).
settle 2.5
settle 1
