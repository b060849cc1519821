#!/usr/bin/env bash
# Seed 002: a monitoring container (node_exporter with -v /:/host, the
# default mountPropagation None = rprivate) started after a block device was
# mounted under the kubelet plugins path keeps a private copy when the host
# unmounts it; rbd unmap / any exclusive open (here mkfs.ext4) gets EBUSY.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin runc mount
fakebin node_exporter sleep

loopdev 32
dev=$LOOPDEV
vol=$W/kubelet/plugins/kubernetes.io/rbd/mounts/k8s-image-pvc-c838258f
mkdir -p "$vol" "$W/containers/c1/rootfs/host"
mount "$dev" "$vol"
settle

# The container: a namespace of its own, / bound recursively at /host and
# made rprivate, as runc does for a hostPath volume without propagation.
bg unshare -m --propagation unchanged sh -c "
	$W/bin/runc --rbind / $W/containers/c1/rootfs/host &&
	$W/bin/runc --make-rprivate $W/containers/c1/rootfs/host &&
	touch $W/c1.ready && exec $W/bin/node_exporter 600"
wait_file "$W/c1.ready"
expect holder_pid "${PIDS[-1]}"
expect holder_ns "$(nsof "${PIDS[-1]}")"
settle

# The pod using the volume goes away: kubelet unmounts the device...
umount "$vol"
settle
# ...and unmapping it (an exclusive open of the device) fails.
if mkfs.ext4 -q -F "$dev" 2>/dev/null; then echo "mkfs unexpectedly succeeded" >&2; exit 1; fi
settle
