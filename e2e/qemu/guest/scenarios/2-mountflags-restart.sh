#!/bin/bash
# Seed 001 on real systemd: docker.service with MountFlags=slave and
# live-restore (dockerd running its own containerd, as Docker did then).
# dockerd dies and systemd restarts it (Restart=always) into a new slave
# namespace; the shims survive in the old one with the sandboxes' network
# namespaces. Unmounting one from the new dockerd's namespace fails with
# EINVAL: it is mounted only in the old one.
source /lab/lib.sh
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
docker run -d --network none --name c1 "$IMG" sleep 3600 >/dev/null
docker run -d --network none --name c2 "$IMG" sleep 3600 >/dev/null
sandbox=$(docker inspect -f '{{.NetworkSettings.SandboxKey}}' c1)
c1=$(docker inspect -f '{{.Id}}' c1)
# Nothing pins the netns bind: the namespace's oldest survivor, c1's shim,
# is the process named.
shim=$(pgrep -f "containerd-shim-runc-v2 .*-id $c1" | head -1)
old=$(mainpid docker.service)
expect holder_pid "$shim"
expect holder_ns "$(nsof "$shim")"
expect old_ns "$(nsof "$old")"
sleep 1
# dockerd dies (a crash, an OOM kill); systemd restarts it the same way.
systemctl kill --kill-whom=main --signal=KILL docker.service
for _ in $(seq 60); do
	new=$(mainpid docker.service)
	[ -n "$new" ] && [ "$new" != 0 ] && [ "$new" != "$old" ] && docker version >/dev/null 2>&1 && break
	sleep 0.5
done
expect new_ns "$(nsof "$new")"
expect unit docker.service
sleep 1
if nsenter -t "$new" -m umount "$sandbox"; then echo "umount unexpectedly succeeded" >&2; exit 1; fi
sleep 1
docker rm -f c1 c2 >/dev/null 2>&1 || true
systemctl stop docker.service
kill -9 "$shim" 2>/dev/null || true
rm -f /etc/systemd/system/docker.service.d/lab-mountflags.conf
systemctl unmask --runtime containerd.service
systemctl daemon-reload
