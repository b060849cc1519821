#!/usr/bin/env bash
# Seed 002 (seeds/node-exporter.sh) in a plain namespace: the device a loop
# device, the container made as runc makes it (/ bound recursively at
# /host, rprivate), node_exporter a fakebin of sleep; the reformat fails.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
seed node-exporter
fakebin runc mount
fakebin node_exporter sleep

loopdev 32
DEV=$LOOPDEV
container() {
	mkdir -p "$W/containers/c1/rootfs/host"
	rbind_container "$W/containers/c1/rootfs/host" node_exporter
}
seed_node_exporter "$DEV" "$W/$RBD_MOUNTS/k8s-image-pvc-c838258f" container reformat
