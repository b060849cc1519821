#!/usr/bin/env bash
# A mount namespace no process runs in, kept alive only by a process that
# holds its nsfs file open (exec 7</proc/PID/ns/mnt, as a runtime pins a
# namespace by fd): no bind of it anywhere. The device its copy keeps
# mounted cannot be reformatted; the finding names the process holding the
# namespace open, and its fd.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin keeper sleep
fakebin pinner sleep

loopdev 32
dev=$LOOPDEV
mkdir -p "$W/vol"
mount "$dev" "$W/vol"
settle
bg unshare -m --propagation private sh -c "touch $W/ns.ready && exec $W/bin/keeper 600"
keeper=$!
wait_file "$W/ns.ready"
expect holder_ns "$(nsof "$keeper")"
bg sh -c "exec 7</proc/$keeper/ns/mnt && touch $W/fd.ready && exec $W/bin/pinner 600"
wait_file "$W/fd.ready"
expect holder_pid "${PIDS[-1]}"
settle
kill -9 "$keeper"; wait "$keeper" 2>/dev/null || true
settle
umount "$W/vol"
settle
if mkfs.ext4 -q -F "$dev" 2>/dev/null; then echo "mkfs unexpectedly succeeded" >&2; exit 1; fi
settle
