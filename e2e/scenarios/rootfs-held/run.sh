#!/usr/bin/env bash
# A container's rootfs held after the container stopped (issue 28, item 5):
# containerd's runc shim mounts the task's rootfs (an overlay) at its
# bundle, .../io.containerd.runtime.v2.task/NAMESPACE/ID/rootfs, in the
# node's namespace. A log agent on the node opened a file in it by that
# path and keeps it open; the container stops and the shim's unmount of
# the rootfs fails with EBUSY ("failed rootfs umount", task delete fails).
# rootfs-held: not a leak; it names the agent, its fd and file, the
# container and its containerd namespace, and the shim's mount.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin containerd-shim mount
mkdir -p "$W/bin/umount"
cp "$(command -v umount)" "$W/bin/umount/containerd-shim"
fakebin log-agent sleep

snap=$W/snapshots
bundle=$W/run/containerd/io.containerd.runtime.v2.task/k8s.io/app
mkdir -p "$snap" "$bundle/rootfs"
mount -t tmpfs snapshots "$snap"
mkdir -p "$snap/1/fs/tmp" "$snap/2/fs" "$snap/2/work"
"$W/bin/containerd-shim" -t overlay overlay -o "lowerdir=$snap/1/fs,upperdir=$snap/2/fs,workdir=$snap/2/work" "$bundle/rootfs"
echo started >"$bundle/rootfs/tmp/app.log"
# The agent tails the container's log by the node's path of its rootfs.
bg bash -c "exec 3<$bundle/rootfs/tmp/app.log && touch $W/agent.ready && exec $W/bin/log-agent 600"
wait_file "$W/agent.ready"
expect holder_pid "${PIDS[-1]}"
expect holder_ns "$(nsof "${PIDS[-1]}")"
settle
# The container has stopped: the shim unmounts its rootfs.
if "$W/bin/umount/containerd-shim" "$bundle/rootfs" 2>/dev/null; then echo "umount of the held rootfs unexpectedly succeeded" >&2; exit 1; fi
settle
