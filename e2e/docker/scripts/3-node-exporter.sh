#!/usr/bin/env bash
# Incident 3 (seed 002, e2e/scenarios/seeds/node-exporter.sh) with Docker:
# the device a zram disk (the rbd stand-in), the container a docker run
# that binds the kubelet directory rprivate (Docker's default); both the
# reformat and the unmap fail.
source "$(dirname "$(readlink -f "$0")")/lib.sh"
dockerd_start
image
seed node-exporter

zramdev 32
DEV=/dev/zram$ZRAMID
container() {
	# The seed binds / at /host; dockerd would force rslave on / (it
	# contains its root), so the kubelet directory is bound, as a hostPath
	# of it would be.
	"$DK" run -d --network none --name node-exporter -v "$W/kubelet:/host/kubelet:ro" "$IMG" sleep 3600 >/dev/null
	HOLDER=$("$DK" inspect -f '{{.State.Pid}}' node-exporter)
	expect container "$("$DK" inspect -f '{{.Id}}' node-exporter)"
	settle 1
}
seed_node_exporter "$DEV" "$W/$RBD_MOUNTS/k8s-image-kubernetes-dynamic-pvc-c838258f" container reformat rbd_unmap

# mntleak release detaches node-exporter's copy: the reformat and the unmap
# go through, node-exporter keeps running.
unmap() { reformat && rbd_unmap; }
release_point unmap
