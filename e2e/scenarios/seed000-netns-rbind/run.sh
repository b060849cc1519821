#!/usr/bin/env bash
# Seed 000: a pod with hostPath / mounted at /rootfs (mountPropagation None:
# rbind + rprivate) starts after the CNI network namespace of another pod was
# bound at /run/netns/cni-…. Deleting that pod, containerd unmounts the netns
# (MNT_DETACH) and unlinks it: the container's private copy stays. On RHEL 7
# without fs.may_detach_mounts the unlink fails with EBUSY; on this kernel it
# succeeds and detaches the copy, so the leak is reported at the unmount.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin runc mount
fakebin containerd umount
fakebin sleeping sleep

netns=$W/run/netns/cni-49ddd103-d374-1f86-7324-13abaeb9c910
mkdir -p "$(dirname "$netns")" "$W/k8s.io/5b498caf/rootfs/rootfs"
touch "$netns"
unshare --net="$netns" true # what `ip netns add` does: an nsfs bind
settle

bg unshare -m --propagation unchanged sh -c "
	$W/bin/runc --rbind / $W/k8s.io/5b498caf/rootfs/rootfs &&
	$W/bin/runc --make-rprivate $W/k8s.io/5b498caf/rootfs/rootfs &&
	touch $W/c.ready && exec $W/bin/sleeping 600"
wait_file "$W/c.ready"
expect holder_pid "${PIDS[-1]}"
expect holder_ns "$(nsof "${PIDS[-1]}")"
settle

# The sleeping pod is deleted: containerd tears its netns down.
"$W/bin/containerd" -l "$netns"
rm -f "$netns"
settle
