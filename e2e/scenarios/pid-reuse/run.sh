#!/usr/bin/env bash
# A holder namespace loses one of its processes and an unrelated process
# gets the same pid (forced through ns_last_pid). The finding must name the
# namespace's remaining process, never the unrelated one.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin keeper sleep
fakebin holder sleep
fakebin unrelated sleep

loopdev 32
dev=$LOOPDEV
mkdir -p "$W/vol"
mount "$dev" "$W/vol"
settle
bg unshare -m --propagation private sh -c "touch $W/ns.ready && exec $W/bin/keeper 600"
keeper=$!
wait_file "$W/ns.ready"
expect holder_pid "$keeper"
expect holder_ns "$(nsof "$keeper")"
bg nsenter -t "$keeper" -m "$W/bin/holder" 600
holder=$!
settle
umount "$W/vol"
settle
kill -9 "$holder"; wait "$holder" 2>/dev/null || true
settle
# Give the holder's pid to an unrelated process in the node namespace.
for _ in $(seq 50); do
	echo $((holder - 1)) >/proc/sys/kernel/ns_last_pid
	"$W/bin/unrelated" 600 &
	u=$!
	[ "$u" -eq "$holder" ] && break
	kill -9 "$u"; wait "$u" 2>/dev/null || true
done
PIDS+=("$u")
[ "$u" -eq "$holder" ] || { echo "could not reuse pid $holder" >&2; exit 1; }
settle
if mkfs.ext4 -q -F "$dev" 2>/dev/null; then echo "mkfs unexpectedly succeeded" >&2; exit 1; fi
settle
