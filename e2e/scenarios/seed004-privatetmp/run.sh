#!/usr/bin/env bash
# Seed 004: ntpd.service with PrivateTmp=yes starts after a container: systemd
# gives it a new mount namespace (/ made slave) with a private /tmp, and that
# namespace copies the container's mounts. Docker's storage root is private
# (as docker made its graph directory), so the unmounts do not reach the
# copy. Both layouts: the overlay `merged` (rmdir then succeeds on this
# kernel, detaching the copy; on RHEL 7 it fails with EBUSY) and a
# device-backed volume (the device stays busy: mkfs.ext4 gets EBUSY).
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin ntpd sleep

mkdir -p "$W/docker"
mount --bind "$W/docker" "$W/docker" && mount --make-private "$W/docker"
merged=$W/docker/overlay2/cd38b6e94e55/merged
mkdir -p "$merged" "$W/docker/volumes/v1/_data"
mount -t tmpfs overlay "$merged"
loopdev 32
dev=$LOOPDEV
mount "$dev" "$W/docker/volumes/v1/_data"
settle

tmp=$W/tmp/systemd-private-5e0b1cf6c3b94f0c9b0f7f7d6d0a2e11-ntpd.service-Qx3vLp/tmp
mkdir -p "$tmp" && chmod 1777 "$tmp"
bg unshare -m --propagation slave sh -c "mount --bind $tmp /tmp && touch $W/ntpd.ready && exec $W/bin/ntpd 600"
wait_file "$W/ntpd.ready"
expect holder_pid "${PIDS[-1]}"
expect holder_ns "$(nsof "${PIDS[-1]}")"
settle

# The container is removed.
umount "$merged"
settle
rmdir "$merged"
umount "$W/docker/volumes/v1/_data"
settle
if mkfs.ext4 -q -F "$dev" 2>/dev/null; then echo "mkfs unexpectedly succeeded" >&2; exit 1; fi
settle
# mntleak reports a leak once the teardown has settled (2 s), on the next
# event after that (this sleep's exit): the holder outlives that by a
# second, so that its /proc is read before the cleanup kills it (else the
# leak is reported without its holder, which had exited).
settle 2.5
settle 1
