#!/usr/bin/env bash
# Incident 5 (seed 004): ntpd.service with PrivateTmp=yes starts after the
# containers: systemd gives it a new mount namespace with / made slave and a
# private /tmp, and it copies the containers' mounts. With Docker's overlay2
# layout (its root shared) the unmount reaches the slave copy. A
# device-backed volume below a private directory (as Docker up to 17.x made
# its graph directory) stays in ntpd's copy: the device stays busy.
source "$(dirname "$(readlink -f "$0")")/lib.sh"
dockerd_start
image
fakebin ntpd sleep

"$DK" run -d --network none --name web "$IMG" sleep 3600 >/dev/null

loopdev 32
mkdir -p "$W/data/volumes"
mount --bind "$W/data/volumes" "$W/data/volumes"
mount --make-private "$W/data/volumes"
"$DK" volume create --driver local --opt type=ext4 --opt "device=$LOOPDEV" pgdata >/dev/null
"$DK" run -d --network none --name db -v pgdata:/var/lib/postgresql "$IMG" sleep 3600 >/dev/null
settle

# systemd starts ntpd.service (PrivateTmp=yes): new namespace, / slave,
# /tmp/systemd-private-<boot id>-ntpd.service-<random>/tmp bound on /tmp.
tmp=$W/tmp/systemd-private-5e0b1cf6c3b94f0c9b0f7f7d6d0a2e11-ntpd.service-Qx3vLp/tmp
mkdir -p "$tmp" && chmod 1777 "$tmp"
unshare -m --propagation slave sh -c "mount --bind $tmp /tmp && exec $W/bin/ntpd 3600" &
PIDS+=($!)
expect holder_pid "$!"
settle
expect holder_ns "$(nsof "${PIDS[-1]}")"

# The containers are removed.
"$DK" rm -f web >/dev/null
settle
"$DK" rm -f db >/dev/null
settle
if mkfs.ext4 -q -F "$LOOPDEV" 2>/dev/null; then echo "mkfs.ext4 unexpectedly succeeded" >&2; exit 1; fi
settle

# mntleak release detaches ntpd's copy: the reformat goes through, ntpd
# keeps running.
release_point mkfs.ext4 -q -F "$LOOPDEV"
