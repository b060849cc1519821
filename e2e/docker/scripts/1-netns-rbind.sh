#!/usr/bin/env bash
# Incident 1 (seed 000): a container binds a host directory with Docker's
# default propagation (rprivate) after a CNI network namespace was created;
# the netns is then removed the way containerd does it (umount2 MNT_DETACH,
# then unlink).
source "$(dirname "$(readlink -f "$0")")/lib.sh"
dockerd_start
image

ip netns add cni-49ddd103-d374-1f86-7324-13abaeb9c910
settle

# hostPath / at /rootfs: dockerd forces rslave when the source contains its
# root, so this copy follows the host's unmounts (no leak).
"$DK" run -d --network none --name rootfs-slash -v /:/rootfs "$IMG" sleep 3600 >/dev/null
# /run, where CNI keeps network namespaces, gets the default: rprivate.
"$DK" run -d --network none --name rootfsmount -v /run:/rootfs/run "$IMG" sleep 3600 >/dev/null
pid=$("$DK" inspect -f '{{.State.Pid}}' rootfsmount)
expect holder_pid "$pid"
expect holder_ns "$(nsof "$pid")"
expect container "$("$DK" inspect -f '{{.Id}}' rootfsmount)"
settle 1

# The sleeping pod is deleted: its netns is torn down as containerd does it.
ip netns delete cni-49ddd103-d374-1f86-7324-13abaeb9c910
settle 1
