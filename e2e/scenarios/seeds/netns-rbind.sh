# Seed 000 (../shared/seeds/000_*): a pod with hostPath / mounted at
# /rootfs (mountPropagation None: rbind + rprivate) starts after the CNI
# network namespace of another pod was bound at /run/netns/cni-…. Deleting
# that pod, containerd unmounts the netns (MNT_DETACH) and unlinks it: the
# container's private copy stays. On RHEL 7 without fs.may_detach_mounts
# the unlink fails with EBUSY; on this kernel it succeeds and detaches the
# copy, so the leak is reported at the unmount.
#
# seed_netns_rbind ADD CONTAINER DELETE: the story, told with the
# harness's own
#   ADD NAME     binds network namespace NAME (ip netns add, or by hand)
#   CONTAINER    starts the container that binds the host's / (or /run)
#                rprivate; its pid in HOLDER
#   DELETE NAME  tears NAME down as containerd does (umount2 MNT_DETACH,
#                then unlink)
NETNS=cni-49ddd103-d374-1f86-7324-13abaeb9c910

seed_netns_rbind() {
	"$1" "$NETNS"
	settle
	"$2"
	expect_holder "$HOLDER"
	settle
	# The sleeping pod is deleted: containerd tears its netns down.
	"$3" "$NETNS"
	settle
}
