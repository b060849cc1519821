#!/bin/bash
# Seed 002 (seeds/node-exporter.sh) on device-mapper (how rbd and LVM
# volumes look): a linear target over a loop device, mounted; the copy is a
# unit's own private mount namespace; dmsetup remove fails with EBUSY (its
# ioctl on /dev/mapper/control names the device). The daemon runs with the
# perf buffer here (run.sh restarts its unit with the line below), as on
# kernels without a ring buffer.
# lab-daemon-args: --buffer=perf
source /lab/lib.sh
seed node-exporter
modprobe dm-mod
loopdev 64
dmsetup create labdm --table "0 $((64 * 2048)) linear $LOOPDEV 0"
DEV=/dev/mapper/labdm
mkfs.ext4 -q -F "$DEV"
expect device "$DEV"
unit() {
	systemd-run --unit=lab-agent.service -p PrivateMounts=yes -p MountFlags=private sleep 3600
	sleep 1
	expect unit lab-agent.service
	HOLDER=$(mainpid lab-agent.service)
}
dm_remove() { dmsetup remove labdm; }
seed_node_exporter "$DEV" /srv/vol unit dm_remove
# The state stays while the guest's oracle compares the findings.
sleep 6
systemctl stop lab-agent.service
sleep 1
dmsetup remove labdm
losetup -d "$LOOPDEV"
