#!/usr/bin/env bash
# Incident 4 (seed 003, e2e/scenarios/seeds/subpath-configmap.sh) with
# Docker: the container binds the subpath; after the ConfigMap's update,
# starting it again fails with ENOENT.
source "$(dirname "$(readlink -f "$0")")/lib.sh"
dockerd_start
image
seed subpath-configmap

start() {
	"$DK" create --network none --name test -v "$1:/etc/extra.ini" "$IMG" sleep 1 >/dev/null
	"$DK" start -a test
}
again() { "$DK" start test >/dev/null; }
seed_subpath_configmap start again
settle 1

# mntleak release refuses: a stale bind is not a leak.
release_point
