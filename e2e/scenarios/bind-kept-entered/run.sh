#!/usr/bin/env bash
# A mount namespace no process runs in, kept alive by a bind of its nsfs
# file (unshare --mount=FILE), keeps its copies of two devices' mounts
# after the node unmounts them. mkfs on the first fails; then someone looks
# inside (nsenter --mount=FILE) and leaves; mkfs on the second fails too.
# Both findings name the bind and the namespace's recorded creation: the
# look inside enters the same namespace, it does not make a new one whose
# creation "predates tracing".
source "$(dirname "$(readlink -f "$0")")/../lib.sh"

loopdev 32
dev1=$LOOPDEV
loopdev 32 device2
dev2=$LOOPDEV
mkdir -p "$W/vol1" "$W/vol2"
mount "$dev1" "$W/vol1"
mount "$dev2" "$W/vol2"
mntns_pinned "$W/pins"
settle
umount "$W/vol1"
umount "$W/vol2"
settle
must_fail mkfs.ext4 -q -F "$dev1"
settle
nsenter --mount="$W/pins/mnt" true
settle
must_fail mkfs.ext4 -q -F "$dev2"
settle
