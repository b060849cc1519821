#!/bin/bash
# Seed 004 on real systemd: a PrivateTmp=yes unit started after the
# containers copies their mounts; a device-backed Docker volume below a
# private directory (as Docker up to 17.x made its graph directory) stays
# in the unit's copy when the container is removed; the device stays busy.
source /lab/lib.sh
systemctl start docker.service
image
loopdev 32
mkdir -p /var/lib/docker/volumes
mount --bind /var/lib/docker/volumes /var/lib/docker/volumes
mount --make-private /var/lib/docker/volumes
docker volume create --driver local --opt type=ext4 --opt "device=$LOOPDEV" pgdata >/dev/null
docker run -d --network none --name db -v pgdata:/var/lib/postgresql "$IMG" sleep 3600 >/dev/null
sleep 1
systemd-run --unit=lab-ntpd.service -p PrivateTmp=yes sleep 3600
sleep 1
expect unit lab-ntpd.service
expect holder_pid "$(mainpid lab-ntpd.service)"
expect holder_ns "$(nsof "$(mainpid lab-ntpd.service)")"
expect device "$LOOPDEV"
docker rm -f db >/dev/null
sleep 1
if mkfs.ext4 -q -F "$LOOPDEV" 2>/dev/null; then echo "mkfs.ext4 unexpectedly succeeded" >&2; exit 1; fi
# The state stays while the guest's oracle compares the findings (it reads
# them from the journal, a few seconds late under TCG).
sleep 6
systemctl stop lab-ntpd.service
docker volume rm pgdata >/dev/null
umount /var/lib/docker/volumes
losetup -d "$LOOPDEV"
systemctl stop docker.service
