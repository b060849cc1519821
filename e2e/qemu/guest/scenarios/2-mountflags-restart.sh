#!/bin/bash
# Seed 001 (seeds/mountflags-restart.sh) on real systemd: docker.service
# with MountFlags=slave and live-restore (dockerd running its own
# containerd, as Docker did then), killed and restarted by systemd
# (Restart=always) into a new slave namespace; the shims survive in the old
# one with the sandboxes' network namespaces.
source /lab/lib.sh
seed mountflags-restart
start() {
	mkdir -p /etc/systemd/system/docker.service.d
	cat >/etc/systemd/system/docker.service.d/lab-mountflags.conf <<'U'
[Service]
MountFlags=slave
ExecStart=
ExecStart=/usr/sbin/dockerd -H fd://
RestartSec=1
U
	# dockerd supervises its own containerd when none runs (Debian's
	# containerd.service would otherwise serve it from the host's namespace).
	systemctl stop docker.service containerd.service
	systemctl mask --runtime containerd.service
	rm -f /run/containerd/containerd.sock
	systemctl daemon-reload
	systemctl start docker.service
	image
	mountflags_containers
	# Nothing pins the netns bind: the namespace's oldest survivor, c1's
	# shim, is the process named.
	HOLDER=$SHIM1
	OLD=$(mainpid docker.service)
	expect old_ns "$(nsof "$OLD")"
}
restart() {
	# dockerd dies (a crash, an OOM kill); systemd restarts it the same way.
	systemctl kill --kill-whom=main --signal=KILL docker.service
	for _ in $(seq 60); do
		NEW=$(mainpid docker.service)
		[ -n "$NEW" ] && [ "$NEW" != 0 ] && [ "$NEW" != "$OLD" ] && docker version >/dev/null 2>&1 && break
		sleep 0.5
	done
	expect new_ns "$(nsof "$NEW")"
	expect unit docker.service
}
unmount() { nsenter -t "$NEW" -m umount "$1"; }
seed_mountflags_restart start restart unmount
docker rm -f c1 c2 >/dev/null 2>&1 || true
systemctl stop docker.service
kill -9 "$HOLDER" 2>/dev/null || true
rm -f /etc/systemd/system/docker.service.d/lab-mountflags.conf
systemctl unmask --runtime containerd.service
systemctl daemon-reload
