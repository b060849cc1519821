#!/usr/bin/env bash
# Bidirectional (rshared) propagation: a container whose volume is bound
# rshared mounts something inside it; the mount propagates back to the node,
# where removing the directory (or the volume) then fails with EBUSY. The
# blocking mount is in the caller's own namespace but was made elsewhere.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin runc mount
fakebin csi-driver mount
fakebin app sleep

vol=$W/kubelet/pods/p1/volumes/kubernetes.io~empty-dir/shared
rootfs=$W/containers/c3/rootfs
mkdir -p "$vol" "$rootfs/data"
mount --bind "$vol" "$vol" && mount --make-shared "$vol"
settle
bg unshare -m --propagation unchanged sh -c "
	$W/bin/runc --rbind $vol $rootfs/data &&
	mkdir -p $rootfs/data/sub &&
	$W/bin/csi-driver -t tmpfs csi-vol $rootfs/data/sub &&
	touch $W/c.ready && exec $W/bin/app 600"
wait_file "$W/c.ready"
expect holder_pid "${PIDS[-1]}"
expect holder_ns "$(nsof "${PIDS[-1]}")"
settle
if rmdir "$vol/sub" 2>/dev/null; then echo "rmdir unexpectedly succeeded" >&2; exit 1; fi
settle
