#!/usr/bin/env bash
# Seed 003 (seeds/subpath-configmap.sh) without a runtime: the container's
# first start is not played; starting it again is runc's bind of the
# subpath into its rootfs (a fakebin of mount), which fails with ENOENT.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
seed subpath-configmap
fakebin runc mount

again() {
	local rootfs=$W/docker/overlay2/31b076d0/merged
	mkdir -p "$rootfs/etc" && touch "$rootfs/etc/extra.ini"
	"$W/bin/runc" --bind "$1" "$rootfs/etc/extra.ini"
}
seed_subpath_configmap true again
