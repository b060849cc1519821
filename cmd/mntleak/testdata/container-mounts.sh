#!/usr/bin/env bash
# A running container's own mounts and a pod-style volume
# (TestContainerMountsRefused): a tmpfs with data mounted on the node as
# kubelet mounts an emptyDir, bound into a container (named web) whose cwd
# is elsewhere. Nothing here is a leak. Reports KEY=VALUE lines, then waits
# for $W/done before tearing down.
source "$(dirname "$(readlink -f "$0")")/../../../e2e/docker/scripts/lib.sh"
dockerd_start
image

vol=$W/pods/0f3c2a4e-5b6d-4e7f-8a9b-1c2d3e4f5a6b/volumes/kubernetes.io~empty-dir/data
mkdir -p "$vol"
mount -t tmpfs -o size=1m tmpfs "$vol"
echo data >"$vol/file"
"$DK" run -d --network none --name web -w / -v "$vol:/data" "$IMG" sleep 3600 >/dev/null
expect holder_pid "$("$DK" inspect -f '{{.State.Pid}}' web)"
expect node_pid "$$"
expect ready 1
for _ in $(seq 1200); do
	[ -e "$W/done" ] && break
	sleep 0.1
done
