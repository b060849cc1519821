#!/bin/bash
# Seed 004 (seeds/privatetmp.sh) on real systemd: a real PrivateTmp=yes
# unit started after a container whose device-backed Docker volume sits
# below a private directory (as Docker up to 17.x made its graph
# directory); the device stays busy when the container is removed.
source /lab/lib.sh
seed privatetmp
systemctl start docker.service
image
unit() {
	systemd-run --unit=lab-ntpd.service -p PrivateTmp=yes sleep 3600
	sleep 1
	expect unit lab-ntpd.service
	HOLDER=$(mainpid lab-ntpd.service)
}
remove() { docker rm -f db >/dev/null; }
seed_privatetmp /var/lib/docker/volumes privatetmp_db unit remove
# The state stays while the guest's oracle compares the findings (it reads
# them from the journal, a few seconds late under TCG).
sleep 6
systemctl stop lab-ntpd.service
docker volume rm pgdata >/dev/null
umount /var/lib/docker/volumes
losetup -d "$LOOPDEV"
systemctl stop docker.service
