#!/usr/bin/env bash
# Seed 002 as it really fails: `rbd unmap` is a write of the device id to
# /sys/bus/rbd/remove_single_major, which fails with EBUSY while a
# monitoring container (node_exporter, -v /:/host, mountPropagation None)
# keeps a private copy of the filesystem. zram stands in for rbd: its
# teardown is a sysfs write too (reset, then hot_remove), and fails alike.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin runc mount
fakebin node_exporter sleep
fakebin rbd bash

zramdev 32
dev=/dev/zram$ZRAMID
vol=$W/kubelet/plugins/kubernetes.io/rbd/mounts/k8s-image-pvc-0d1e2f3a
mkdir -p "$vol" "$W/containers/c1/rootfs/host"
mount "$dev" "$vol"
settle

bg unshare -m --propagation unchanged sh -c "
	$W/bin/runc --rbind / $W/containers/c1/rootfs/host &&
	$W/bin/runc --make-rprivate $W/containers/c1/rootfs/host &&
	touch $W/c1.ready && exec $W/bin/node_exporter 600"
wait_file "$W/c1.ready"
expect holder_pid "${PIDS[-1]}"
expect holder_ns "$(nsof "${PIDS[-1]}")"
settle

# The pod goes away: kubelet unmounts the device, then unmaps it.
umount "$vol"
settle
if "$W/bin/rbd" -c "echo $ZRAMID > /sys/class/zram-control/hot_remove" 2>/dev/null; then
	echo "hot_remove unexpectedly succeeded" >&2
	exit 1
fi
settle
