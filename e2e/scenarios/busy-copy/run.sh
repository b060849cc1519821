#!/usr/bin/env bash
# A busy propagated copy: a tmpfs mounted on the node, a slave namespace
# whose copy of it is some process's working directory; unmounting it on
# the node fails with EBUSY because the unmount would propagate to the busy
# copy.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin worker sleep

mkdir -p "$W/shared/vol"
mount -t tmpfs mntleak-vol "$W/shared/vol"
settle
bg unshare -m --propagation slave sh -c "cd $W/shared/vol && touch $W/w.ready && exec $W/bin/worker 600"
wait_file "$W/w.ready"
expect holder_pid "${PIDS[-1]}"
expect holder_ns "$(nsof "${PIDS[-1]}")"
settle
if umount "$W/shared/vol" 2>/dev/null; then echo "umount unexpectedly succeeded" >&2; exit 1; fi
settle
