#!/usr/bin/env bash
# A failure mntleak rightly calls unknown: a mount namespace no process
# runs in, kept alive by a bind of its nsfs file, made before tracing began
# (tracing_begins: the recording starts there). It keeps its copy of a
# device the node then unmounts; mkfs of the device fails with EBUSY. The
# finding names the namespace, the bind that keeps it and the unmount to
# run through it; nothing in the kernel says who made the namespace (its
# maker exited before tracing, no process is in it), and the finding says
# that is what is missing.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"

loopdev 32
mkdir -p "$W/vol" "$W/pins"
mount "$LOOPDEV" "$W/vol"
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
tracing_begins
settle
umount "$W/vol"
settle
if mkfs.ext4 -q -F "$LOOPDEV" 2>/dev/null; then echo "mkfs on $LOOPDEV unexpectedly succeeded" >&2; exit 1; fi
settle
