# Seed 002 (../shared/seeds/002_*): a monitoring container (node_exporter
# with -v /:/host, the default mountPropagation None = rprivate) started
# after a block device was mounted under kubelet's plugins path keeps a
# private copy when the host unmounts it: then `rbd unmap` (a write of the
# device id to /sys/bus/rbd/remove_single_major) and any exclusive open (a
# reformat) fail with EBUSY. zram stands in for rbd (its teardown is a
# sysfs write too), device-mapper in the lab guest (dmsetup remove).
#
# seed_node_exporter DEV VOL CONTAINER TEARDOWN...: the story, told with
# the harness's own
#   DEV, VOL     the block device (ext4) and where kubelet mounts it
#   CONTAINER    starts what copies VOL privately: its pid in HOLDER
#   TEARDOWN     each operation on DEV that the copy makes fail, in order
RBD_MOUNTS=kubelet/plugins/kubernetes.io/rbd/mounts

seed_node_exporter() {
	local dev=$1 vol=$2 container=$3 t
	shift 3
	mkdir -p "$vol"
	mount "$dev" "$vol"
	settle
	"$container"
	expect_holder "$HOLDER"
	settle
	# The pod using the volume goes away: kubelet unmounts the device...
	umount "$vol"
	settle
	# ...and tearing it down fails.
	for t in "$@"; do
		must_fail "$t"
		settle
	done
}

# reformat: the exclusive open of $DEV a reformat needs.
reformat() { mkfs.ext4 -q -F "$DEV"; }

# rbd_unmap: zram's unmap of $ZRAMID (rbd's is a sysfs write alike), by
# $W/bin/rbd.
rbd_unmap() {
	[ -x "$W/bin/rbd" ] || fakebin rbd bash
	"$W/bin/rbd" -c "echo $ZRAMID > /sys/class/zram-control/hot_remove"
}
