# Sourced by the guest scenarios. expect KEY VALUE records what the host
# test asserts (lab/out/NAME.expect).
set -euo pipefail
SCENARIO=$(basename "$0" .sh)
expect() { echo "$1=$2" >>"/lab/out/$SCENARIO.expect"; }
nsof() { readlink "/proc/$1/ns/mnt" | tr -dc 0-9; }
mainpid() { systemctl show -p MainPID --value "$1"; }
IMG=lab/busybox
# image: a busybox-static image made with docker import (no registry).
image() {
	docker image inspect "$IMG" >/dev/null 2>&1 && return 0
	local root
	root=$(mktemp -d)
	mkdir -p "$root/bin" "$root/etc" "$root/tmp"
	cp /bin/busybox "$root/bin/busybox"
	for a in $(busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$root/bin/$a"; done
	tar -C "$root" -c . | docker import --change 'ENV PATH=/bin' - "$IMG" >/dev/null
	rm -rf "$root"
}
# loopdev SIZE_MIB: an ext4 image on a loop device, in $LOOPDEV.
loopdev() {
	truncate -s "${1}M" "/var/tmp/$SCENARIO.img"
	mkfs.ext4 -q -F "/var/tmp/$SCENARIO.img"
	LOOPDEV=$(losetup --find --show "/var/tmp/$SCENARIO.img")
}
