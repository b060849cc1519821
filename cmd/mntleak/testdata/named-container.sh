#!/usr/bin/env bash
# A leak held by a named Docker container (TestNamedDockerContainer): a
# tmpfs under a directory that a container named web binds (rprivate, the
# Docker default) is unmounted on the node; the container keeps its copy.
# A second container is labelled as cri-dockerd labels a pod's container.
# Reports KEY=VALUE lines, then waits for $W/done before tearing down.
source "$(dirname "$(readlink -f "$0")")/../../../e2e/docker/scripts/lib.sh"
dockerd_start
image

uid=0f3c2a4e-5b6d-4e7f-8a9b-1c2d3e4f5a6b
vol=$W/src/vol
mkdir -p "$vol"
mount -t tmpfs -o size=1m tmpfs "$vol"
settle
"$DK" run -d --network none --name web -v "$W/src:/host" "$IMG" sleep 3600 >/dev/null
name=k8s_app_web-7f9c_default_${uid}_0
"$DK" run -d --network none --name "$name" --label io.kubernetes.pod.name=web-7f9c --label io.kubernetes.pod.namespace=default \
	--label io.kubernetes.pod.uid=$uid --label io.kubernetes.container.name=app "$IMG" sleep 3600 >/dev/null
expect holder_pid "$("$DK" inspect -f '{{.State.Pid}}' web)"
expect container "$("$DK" inspect -f '{{.Id}}' web)"
expect pod_container "$("$DK" inspect -f '{{.Id}}' "$name")"
expect pod_container_name "$name"
expect pod_uid "$uid"
settle 1

umount "$vol"
settle 2.5         # the daemon's leak settle window
unshare -m true    # an event after it
expect ready 1
for _ in $(seq 1200); do
	[ -e "$W/done" ] && break
	sleep 0.1
done
