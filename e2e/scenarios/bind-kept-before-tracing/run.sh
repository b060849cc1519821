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
mkdir -p "$W/vol"
mount "$LOOPDEV" "$W/vol"
mntns_pinned "$W/pins"
tracing_begins
settle
umount "$W/vol"
settle
must_fail mkfs.ext4 -q -F "$LOOPDEV"
settle
