#!/usr/bin/env bash
# Seed 002 (seeds/node-exporter.sh) as it really fails: the unmap, a sysfs
# write of the device id, fails with EBUSY; zram stands in for rbd. The
# container as in seed002-node-exporter.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
seed node-exporter
fakebin runc mount
fakebin node_exporter sleep

zramdev 32
DEV=/dev/zram$ZRAMID
container() {
	mkdir -p "$W/containers/c1/rootfs/host"
	rbind_container "$W/containers/c1/rootfs/host" node_exporter
}
seed_node_exporter "$DEV" "$W/$RBD_MOUNTS/k8s-image-pvc-0d1e2f3a" container rbd_unmap
