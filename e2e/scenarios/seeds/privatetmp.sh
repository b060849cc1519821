# Seed 004 (../shared/seeds/004_*): ntpd.service with PrivateTmp=yes
# starts after the containers: systemd gives it a new mount namespace (/
# made slave) with a private /tmp, and that namespace copies the
# containers' mounts. Below a private directory (as Docker up to 17.x made
# its graph directory) the unmounts do not reach the copy: an overlay
# `merged` stays in it (rmdir then succeeds on this kernel, detaching the
# copy; on RHEL 7 it fails with EBUSY), and so does a device-backed volume:
# the device stays busy (a reformat gets EBUSY).
#
# seed_privatetmp DIR CONTAINERS UNIT REMOVE: the story, told with the
# harness's own
#   DIR          the runtime's storage directory, made private here
#   CONTAINERS   the containers start: one with a volume on $LOOPDEV
#   UNIT         the PrivateTmp=yes unit starts: its main pid in HOLDER
#   REMOVE       the containers are removed
seed_privatetmp() {
	mkdir -p "$1"
	mount --bind "$1" "$1" && mount --make-private "$1"
	loopdev 32
	"$2"
	settle
	"$3"
	expect_holder "$HOLDER"
	settle
	"$4"
	settle
	must_fail mkfs.ext4 -q -F "$LOOPDEV"
	settle
}

# privatetmp_unit: what systemd does for ntpd.service with PrivateTmp=yes,
# without systemd: a new mount namespace, / made slave, its
# /tmp/systemd-private-<boot id>-ntpd.service-<random>/tmp bound on /tmp;
# then $W/bin/ntpd runs in it.
privatetmp_unit() {
	local tmp=$W/tmp/systemd-private-5e0b1cf6c3b94f0c9b0f7f7d6d0a2e11-ntpd.service-Qx3vLp/tmp
	fakebin ntpd sleep
	mkdir -p "$tmp" && chmod 1777 "$tmp"
	bg unshare -m --propagation slave sh -c "mount --bind $tmp /tmp && touch $W/ntpd.ready && exec $W/bin/ntpd 600"
	wait_file "$W/ntpd.ready"
	HOLDER=${PIDS[-1]}
}

# privatetmp_db: a database container with a volume on $LOOPDEV (Docker's
# local driver mounts it below its storage directory, volumes/).
privatetmp_db() {
	"${DK:-docker}" volume create --driver local --opt type=ext4 --opt "device=$LOOPDEV" pgdata >/dev/null
	"${DK:-docker}" run -d --network none --name db -v pgdata:/var/lib/postgresql "$IMG" sleep 3600 >/dev/null
}
