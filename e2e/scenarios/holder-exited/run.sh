#!/usr/bin/env bash
# The namespace holding a device copy exits just before the failure: its
# copy is detached but a process elsewhere still has a file on it open (read
# through /proc/PID/root). The failure names the namespace from the lineage
# history, with when its last process left, and the process keeping it busy.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin holder sleep
fakebin reader sleep

loopdev 32
dev=$LOOPDEV
mkdir -p "$W/vol"
mount "$dev" "$W/vol"
echo data >"$W/vol/file"
settle
bg unshare -m --propagation private sh -c "touch $W/ns.ready && exec $W/bin/holder 600"
holder=$!
wait_file "$W/ns.ready"
expect holder_ns "$(nsof "$holder")"
settle
umount "$W/vol"
settle
bg sh -c "exec 3<'/proc/$holder/root$W/vol/file' && exec $W/bin/reader 600"
expect holder_pid "${PIDS[-1]}"
settle
kill -9 "$holder"; wait "$holder" 2>/dev/null || true
if mkfs.ext4 -q -F "$dev" 2>/dev/null; then echo "mkfs unexpectedly succeeded" >&2; exit 1; fi
settle
