#!/usr/bin/env bash
# A CSI node plugin mounts a volume twice: at the kubelet's staging path
# (NodeStageVolume's target) and again, as a bind, at a directory of its
# own. The kubelet's unmount of the staging path succeeds and leaves the
# other mount, so the device's teardown fails with EBUSY (mkfs.ext4, forced
# past its look at the mount table, opens it O_EXCL): double-mount, naming
# both mounts, the plugin that made them and the kubelet's unmount.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin csi-node mount
fakebin kubelet umount
loopdev 16

staging=$W/kubelet/plugins/kubernetes.io/csi/pv/pvc-1/globalmount
own=$W/kubelet/plugins/csi.example.com/mounts/pvc-1
mkdir -p "$staging" "$own"
"$W/bin/csi-node" "$LOOPDEV" "$staging"
"$W/bin/csi-node" --bind "$staging" "$own"
expect holder_ns "$(nsof $$)"
settle
"$W/bin/kubelet" "$staging"
settle
if mkfs.ext4 -q -F -F "$LOOPDEV" 2>/dev/null; then echo "mkfs.ext4 unexpectedly succeeded" >&2; exit 1; fi
settle
