#!/usr/bin/env bash
# Seed 004 (seeds/privatetmp.sh) without systemd or Docker: both layouts
# below the private storage root, the overlay `merged` (a tmpfs) and a
# device-backed volume, mounted by hand; the unit is privatetmp_unit.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
seed privatetmp

merged=$W/docker/overlay2/cd38b6e94e55/merged
volume=$W/docker/volumes/v1/_data
containers() {
	mkdir -p "$merged" "$volume"
	mount -t tmpfs overlay "$merged"
	mount "$LOOPDEV" "$volume"
}
remove() {
	umount "$merged"
	settle
	rmdir "$merged"
	umount "$volume"
}
seed_privatetmp "$W/docker" containers privatetmp_unit remove
# mntleak reports a leak once the teardown has settled (2 s), on the next
# event after that (this sleep's exit): the holder outlives that by a
# second, so that its /proc is read before the cleanup kills it (else the
# leak is reported without its holder, which had exited).
settle 2.5
settle 1
