#!/usr/bin/env bash
# Issue 28 item 5: an agent on the node (a scanner, a log shipper, a
# sandbox's helper) opened a file in a container's rootfs through the
# node's path of it and keeps it open after the container stopped. The
# container runs under containerd (the Docker Engine's own; the kubelet
# drives the same shim): its runc shim mounted the rootfs in the task's
# bundle and, deleting the task, unmounts it without MNT_DETACH, which
# fails with EBUSY ("failed rootfs umount ... device or resource busy").
# Docker's own containers do not show it: overlay2 unmounts a container's
# merged directory with MNT_DETACH, so `docker rm` succeeds and the rootfs
# stays, detached, until the agent lets go.
# The control: a second container, no agent, deleted the same way.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
dockerd_start
image
CTR=(ctr -a "$W/exec/containerd/containerd.sock" -n mntleak-issue28)
"$DK" save "$IMG" | "${CTR[@]}" images import - >/dev/null
ref=docker.io/$IMG:latest
rootfs_of() { echo "$W/exec/containerd/daemon/io.containerd.runtime.v2.task/mntleak-issue28/$1/rootfs"; }
mounted() { awk -v p="$1" '$5 == p' /proc/self/mountinfo | grep -q .; }
delete() { "${CTR[@]}" task kill -s KILL "$1" && "${CTR[@]}" task wait "$1" >/dev/null; "${CTR[@]}" task delete "$1" 2>/dev/null; }

for c in app quiet; do
	"${CTR[@]}" run -d "$ref" "$c" sh -c 'echo data >/tmp/app.log; exec sleep 3600' >/dev/null
	for _ in $(seq 50); do [ -e "$(rootfs_of "$c")/tmp/app.log" ] && break; sleep 0.1; done
	mounted "$(rootfs_of "$c")"
done
expect rootfs "$(rootfs_of app)"
expect quiet_rootfs "$(rootfs_of quiet)"
expect shim_pid "$(pgrep -f "containerd-shim-runc-v2 -namespace mntleak-issue28 -id app " | head -1)"
# The agent: a process of the node with the container's file open.
bg bash -c "exec 3<'$(rootfs_of app)/tmp/app.log'; exec sleep 3600"
agent=${PIDS[-1]}
for _ in $(seq 50); do [ "$(readlink "/proc/$agent/fd/3")" = "$(rootfs_of app)/tmp/app.log" ] && break; sleep 0.05; done
expect agent_pid "$agent"
expect node_ns "$(nsof $$)"
settle 1

# The control first: its rootfs goes; then wait past the settle window.
delete quiet || { echo "deleting the control's task failed" >&2; exit 1; }
if mounted "$(rootfs_of quiet)"; then echo "the control's rootfs stayed" >&2; exit 1; fi
settle 3
if delete app; then expect delete ok; else expect delete failed; fi
if mounted "$(rootfs_of app)"; then expect rootfs_after mounted; else expect rootfs_after gone; fi
settle 3
# The test reads the finding while the agent still holds the rootfs.
release_point
kill -9 "$agent"
"${CTR[@]}" task delete app >/dev/null 2>&1 || true
"${CTR[@]}" container delete app quiet >/dev/null 2>&1 || true
