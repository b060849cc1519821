#!/usr/bin/env bash
# A FUSE server killed without unmounting (a FUSE-based CSI driver's
# sidecar OOM-killed): gcsfuse serves a bucket directory, is SIGKILLed, and
# its mount stays, every access failing with ENOTCONN ("transport
# endpoint is not connected"). The teardown's rmdir of the mountpoint
# fails with EBUSY: dead-fuse-daemon, naming the mount, the server and its
# death, with the lazy unmount.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
top=$(readlink -f "$(dirname "$(readlink -f "$0")")/../../..")
go build -C "$top" -o "$W/bin/gcsfuse" ./e2e/testkit/fuseserve/fuseserver

mkdir -p "$W/bucket"
bg sh -c "exec $W/bin/gcsfuse $W/bucket >$W/gcsfuse.out"
for _ in $(seq 100); do grep -q ready "$W/gcsfuse.out" 2>/dev/null && break; sleep 0.05; done
grep -q ready "$W/gcsfuse.out"
expect holder_ns "$(nsof $$)"
settle
kill -9 "${PIDS[-1]}"
wait "${PIDS[-1]}" 2>/dev/null || true
if stat "$W/bucket/." >/dev/null 2>&1; then echo "the dead FUSE mount still answers" >&2; exit 1; fi
settle
if rmdir "$W/bucket" 2>/dev/null; then echo "rmdir unexpectedly succeeded" >&2; exit 1; fi
settle
