#!/usr/bin/env bash
# Incident 3 (seed 002): an ext4 filesystem on a block device is mounted
# under kubelet's plugins path; a node_exporter-like container binds the
# kubelet directory (mountPropagation None = rprivate) after it; the host
# unmounts it. Then the exclusive open a reformat needs (mkfs.ext4) fails
# with EBUSY, and so does the unmap: rbd unmap writes the device id to
# /sys/bus/rbd/remove_single_major; zram, the rbd stand-in here, is removed
# by writing its id to /sys/class/zram-control/hot_remove.
source "$(dirname "$(readlink -f "$0")")/lib.sh"
dockerd_start
image
fakebin rbd bash

zramdev 32
dev=/dev/zram$ZRAMID
vol=$W/kubelet/plugins/kubernetes.io/rbd/mounts/k8s-image-kubernetes-dynamic-pvc-c838258f
mkdir -p "$vol"
mount "$dev" "$vol"
settle

# The seed binds / at /host; dockerd would force rslave on / (it contains
# its root), so the kubelet directory is bound, as a hostPath of it would be.
"$DK" run -d --network none --name node-exporter -v "$W/kubelet:/host/kubelet:ro" "$IMG" sleep 3600 >/dev/null
pid=$("$DK" inspect -f '{{.State.Pid}}' node-exporter)
expect holder_pid "$pid"
expect holder_ns "$(nsof "$pid")"
expect container "$("$DK" inspect -f '{{.Id}}' node-exporter)"
settle 1

umount "$vol"
settle
if mkfs.ext4 -q -F "$dev" 2>/dev/null; then echo "mkfs.ext4 unexpectedly succeeded" >&2; exit 1; fi
settle
if "$W/bin/rbd" -c "echo $ZRAMID >/sys/class/zram-control/hot_remove" 2>/dev/null; then
	echo "hot_remove unexpectedly succeeded" >&2
	exit 1
fi
settle

# mntleak release detaches node-exporter's copy: the reformat and the unmap
# go through, node-exporter keeps running.
unmap() { mkfs.ext4 -q -F "$dev" && "$W/bin/rbd" -c "echo $ZRAMID >/sys/class/zram-control/hot_remove"; }
release_point unmap
