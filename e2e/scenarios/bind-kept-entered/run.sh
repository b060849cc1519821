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
truncate -s 32M "$W/disk2.img"
mkfs.ext4 -q -F "$W/disk2.img"
dev2=$(losetup --find --show "$W/disk2.img")
LOOPS+=("$dev2")
expect device2 "$dev2"
mkdir -p "$W/vol1" "$W/vol2" "$W/pins"
mount "$dev1" "$W/vol1"
mount "$dev2" "$W/vol2"
# The bind of an nsfs file must not sit on a shared mount.
mount --bind "$W/pins" "$W/pins"
mount --make-private "$W/pins"
touch "$W/pins/mnt"
# The kernel binds it only into a namespace with a smaller id, and ids come
# in per-CPU batches: made on the CPU that made the node's, it always is.
for cpu in $(seq 0 $(($(nproc) - 1))); do
	taskset -c "$cpu" unshare --mount="$W/pins/mnt" --propagation private true 2>/dev/null && break
done
expect holder_ns "$(stat -L -c %i "$W/pins/mnt")"
settle
umount "$W/vol1"
umount "$W/vol2"
settle
if mkfs.ext4 -q -F "$dev1" 2>/dev/null; then echo "mkfs on $dev1 unexpectedly succeeded" >&2; exit 1; fi
settle
nsenter --mount="$W/pins/mnt" true
settle
if mkfs.ext4 -q -F "$dev2" 2>/dev/null; then echo "mkfs on $dev2 unexpectedly succeeded" >&2; exit 1; fi
settle
