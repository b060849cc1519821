#!/bin/bash
# Seed 002 on device-mapper (how rbd and LVM volumes look): a linear target
# over a loop device, mounted; a unit with its own private mount namespace
# starts and copies it; the host unmounts; dmsetup remove fails with EBUSY
# (its ioctl on /dev/mapper/control names the device). The daemon runs
# with the perf buffer here (run.sh restarts its unit with the line
# below), as on kernels without a ring buffer.
# lab-daemon-args: --buffer=perf
source /lab/lib.sh
modprobe dm-mod
loopdev 64
dmsetup create labdm --table "0 $((64 * 2048)) linear $LOOPDEV 0"
mkfs.ext4 -q -F /dev/mapper/labdm
mkdir -p /srv/vol
mount /dev/mapper/labdm /srv/vol
systemd-run --unit=lab-agent.service -p PrivateMounts=yes -p MountFlags=private sleep 3600
sleep 1
expect unit lab-agent.service
expect holder_pid "$(mainpid lab-agent.service)"
expect holder_ns "$(nsof "$(mainpid lab-agent.service)")"
expect device /dev/mapper/labdm
umount /srv/vol
sleep 1
if dmsetup remove labdm; then echo "dmsetup remove unexpectedly succeeded" >&2; exit 1; fi
# The state stays while the guest's oracle compares the findings.
sleep 6
systemctl stop lab-agent.service
sleep 1
dmsetup remove labdm
losetup -d "$LOOPDEV"
