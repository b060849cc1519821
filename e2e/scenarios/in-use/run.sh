#!/usr/bin/env bash
# Negative: a plain umount of a mount that a process in the same namespace
# uses (its working directory). EBUSY, explained as in-use: not a leak.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin app sleep

mkdir -p "$W/data"
mount -t tmpfs mntleak-data "$W/data"
bg sh -c "cd $W/data && touch $W/app.ready && exec $W/bin/app 600"
wait_file "$W/app.ready"
expect holder_pid "${PIDS[-1]}"
expect holder_ns "$(nsof "${PIDS[-1]}")"
settle
if umount "$W/data" 2>/dev/null; then echo "umount unexpectedly succeeded" >&2; exit 1; fi
settle
