#!/usr/bin/env bash
# Incident 1 (seed 000, e2e/scenarios/seeds/netns-rbind.sh) with Docker: the
# CNI netns made and removed by ip netns (as containerd removes it:
# umount2 MNT_DETACH, then unlink), the container a docker run that binds a
# host directory with Docker's default propagation (rprivate).
source "$(dirname "$(readlink -f "$0")")/lib.sh"
dockerd_start
image
seed netns-rbind

netns_add() { ip netns add "$1"; }
container() {
	# hostPath / at /rootfs: dockerd forces rslave when the source contains
	# its root, so this copy follows the host's unmounts (no leak).
	"$DK" run -d --network none --name rootfs-slash -v /:/rootfs "$IMG" sleep 3600 >/dev/null
	# /run, where CNI keeps network namespaces, gets the default: rprivate.
	"$DK" run -d --network none --name rootfsmount -v /run:/rootfs/run "$IMG" sleep 3600 >/dev/null
	HOLDER=$("$DK" inspect -f '{{.State.Pid}}' rootfsmount)
	expect container "$("$DK" inspect -f '{{.Id}}' rootfsmount)"
	settle 1
}
netns_delete() {
	ip netns delete "$1"
	settle 1
}
seed_netns_rbind netns_add container netns_delete
