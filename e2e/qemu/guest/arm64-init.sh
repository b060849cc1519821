#!/bin/busybox sh
# /init of the lab's arm64 guest (arm64.sh): busybox, the static arm64
# mntleak and probe. mntleak's daemon traces while a private namespace
# copies a mounted loop device, the host unmounts it (a leak) and an
# exclusive open of the device fails with EBUSY; each result is printed
# between "==> NAME" and "<== NAME" on the console, for the host test.
/bin/busybox mkdir -p /proc /sys /dev /tmp /srv/vol /var/lib/mntleak
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mount -t tmpfs tmpfs /tmp
# The kernel's messages stay off the console the results are read from.
echo 1 >/proc/sys/kernel/printk
# As on a systemd host: mounts are shared, a private namespace's copies
# are what its own propagation makes them.
mount --make-rshared /
show() { echo "==> $1"; cat "$2"; echo "<== $1"; }
uname -r >/tmp/kernel
show kernel /tmp/kernel
/mntleak version >/tmp/version 2>&1
show version /tmp/version
/probe >/tmp/probe 2>&1
show probe /tmp/probe
insmod /lib/loop.ko
dd if=/dev/zero of=/tmp/vol.img bs=1M count=16 2>/dev/null
losetup /dev/loop0 /tmp/vol.img
mke2fs -q /dev/loop0 >/dev/null 2>&1 || mke2fs /dev/loop0 >/dev/null
mount /dev/loop0 /srv/vol
start=$(cut -d' ' -f1 /proc/uptime)
/mntleak trace --log-format json --journald off --docker-socket "" --cri-socket "" \
	>/dev/null 2>/tmp/mntleak.log &
daemon=$!
i=0
while ! grep -q '"msg":"tracing"' /tmp/mntleak.log && [ $i -lt 1200 ]; do sleep 0.5; i=$((i + 1)); done
echo "$start $(cut -d' ' -f1 /proc/uptime)" >/tmp/startup
show startup /tmp/startup
unshare -m --propagation private sleep 600 &
holder=$!
sleep 2
umount /srv/vol
sleep 1
/probe excl /dev/loop0 >/tmp/excl 2>&1
show excl /tmp/excl
{
	echo "holder_pid=$holder"
	echo "holder_ns=$(readlink /proc/$holder/ns/mnt | tr -dc 0-9)"
	echo "device=/dev/loop0"
} >/tmp/expect
show expect /tmp/expect
# The leak settles 2 s after the unmount, in event time: an event after.
sleep 3
unshare -m true
sleep 3
kill -TERM $daemon
wait $daemon
echo "$?" >/tmp/daemon.rc
show daemon.rc /tmp/daemon.rc
show log /tmp/mntleak.log
kill $holder
echo "==> done"
poweroff -f
