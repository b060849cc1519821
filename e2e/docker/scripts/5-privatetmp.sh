#!/usr/bin/env bash
# Incident 5 (seed 004, e2e/scenarios/seeds/privatetmp.sh) with Docker: a
# container on overlay2 (its root shared, so its unmount reaches the
# slave copy) and one with a device-backed volume below a private
# directory (as Docker up to 17.x made its graph directory), which stays in
# ntpd's copy; ntpd.service is privatetmp_unit.
source "$(dirname "$(readlink -f "$0")")/lib.sh"
dockerd_start
image
seed privatetmp

containers() {
	"$DK" run -d --network none --name web "$IMG" sleep 3600 >/dev/null
	privatetmp_db
}
remove() {
	"$DK" rm -f web >/dev/null
	settle
	"$DK" rm -f db >/dev/null
}
seed_privatetmp "$W/data/volumes" containers privatetmp_unit remove

# mntleak release detaches ntpd's copy: the reformat goes through, ntpd
# keeps running.
release_point mkfs.ext4 -q -F "$LOOPDEV"
