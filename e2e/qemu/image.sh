#!/usr/bin/env bash
# lab/image.sh CACHE: builds the lab guest's root image in CACHE (outside the
# repo): Debian bookworm with systemd as PID 1, Debian's 6.1 cloud kernel
# (its own initramfs loads virtio), device-mapper, Docker. mmdebstrap makes
# the tree (in a mount namespace of its own: what it mounts in the chroot
# while it installs stays there, kernel.sh says why) and mkfs.ext4 -d the
# image, so nothing on the host is mounted.
# The lab (lab.sh) rebuilds it when this file changes.
set -euo pipefail
C=$1
R=$C/rootfs
rm -rf "$R" "$C/root.img"
mkdir -p "$C"
unshare --mount --propagation private mmdebstrap --variant=minbase \
	--include=systemd,systemd-sysv,udev,dbus,util-linux,mount,iproute2,kmod,procps,linux-image-cloud-amd64,initramfs-tools,dmsetup,e2fsprogs,docker.io,busybox-static \
	bookworm "$R"
cat >"$R/etc/fstab" <<'F'
/dev/vda / ext4 rw 0 1
/dev/vdb /lab ext4 rw,nofail 0 2
F
echo labguest >"$R/etc/hostname"
chroot "$R" passwd -d root >/dev/null
# The serial getty would take ttyS0 over and swallow the console.
chroot "$R" systemctl mask serial-getty@ttyS0.service
# Docker starts when a scenario starts it, with no network of its own.
chroot "$R" systemctl disable docker.service docker.socket containerd.service
mkdir -p "$R/lab" "$R/etc/docker"
echo '{"iptables": false, "bridge": "none", "live-restore": true}' >"$R/etc/docker/daemon.json"
# The lab's test run: /lab is the payload disk (lab.sh), run.sh on it.
cat >"$R/etc/systemd/system/lab-test.service" <<'U'
[Unit]
Description=mntleak lab tests
After=multi-user.target
RequiresMountsFor=/lab
[Service]
Type=oneshot
ExecStart=/lab/run.sh
[Install]
WantedBy=multi-user.target
U
chroot "$R" systemctl enable lab-test.service
mkfs.ext4 -q -F -L labroot -d "$R" "$C/root.img" 3G
rm -rf "$R"
