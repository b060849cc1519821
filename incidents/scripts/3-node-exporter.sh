#!/usr/bin/env bash
# Incident 3 (seed 002): an ext4 filesystem on a block device is mounted
# under kubelet's plugins path; a node_exporter-like container binds the
# kubelet directory (mountPropagation None = rprivate) after it; the host
# unmounts it, and the exclusive open that rbd unmap (here mkfs.ext4) needs
# fails with EBUSY.
source "$(dirname "$(readlink -f "$0")")/lib.sh"
dockerd_start
image

loopdev 32
vol=$W/kubelet/plugins/kubernetes.io/rbd/mounts/k8s-image-kubernetes-dynamic-pvc-c838258f
mkdir -p "$vol"
mount "$LOOPDEV" "$vol"
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
if mkfs.ext4 -q -F "$LOOPDEV" 2>/dev/null; then echo "mkfs.ext4 unexpectedly succeeded" >&2; exit 1; fi
settle
