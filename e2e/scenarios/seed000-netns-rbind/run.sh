#!/usr/bin/env bash
# Seed 000 (seeds/netns-rbind.sh) in a plain namespace: the netns bound by
# hand (an nsfs bind, what `ip netns add` does), the container made as runc
# makes it, containerd's teardown by fakebins of umount and rm.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
seed netns-rbind
fakebin runc mount
fakebin containerd umount
fakebin sleeping sleep

netns_add() {
	local f=$W/run/netns/$1
	mkdir -p "$(dirname "$f")"
	touch "$f"
	unshare --net="$f" true
}
container() {
	mkdir -p "$W/k8s.io/5b498caf/rootfs/rootfs"
	rbind_container "$W/k8s.io/5b498caf/rootfs/rootfs" sleeping
}
netns_delete() {
	"$W/bin/containerd" -l "$W/run/netns/$1"
	rm -f "$W/run/netns/$1"
}
seed_netns_rbind netns_add container netns_delete
