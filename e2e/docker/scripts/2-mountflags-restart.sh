#!/usr/bin/env bash
# Incident 2 (seed 001): dockerd under systemd with MountFlags=slave and
# live-restore. It is restarted into a new slave namespace; the shims of the
# running containers survive in the old one. Removing a container, the new
# generation's unmount of its rootfs fails with EINVAL.
source "$(dirname "$(readlink -f "$0")")/lib.sh"
DOCKERD_FLAGS=--live-restore
dockerd_start slave
image

"$DK" run -d --network none --name c1 "$IMG" sleep 3600 >/dev/null
"$DK" run -d --network none --name c2 "$IMG" sleep 3600 >/dev/null
sandbox=$("$DK" inspect -f '{{.NetworkSettings.SandboxKey}}' c1)
c2=$("$DK" inspect -f '{{.Id}}' c2)
shim=$(pgrep -f "containerd-shim-runc-v2 .*-id $c2")
expect holder_pid "$shim"
expect holder_ns "$(nsof "$shim")"
settle 1

# dockerd dies without cleaning up (a crash, an OOM kill; Docker 20.10's
# clean shutdown unmounts its mounts first) and systemd starts it again the
# same way: a new slave namespace.
old_containerd=$(cat "$W/exec/containerd/containerd.pid")
kill -9 "$DOCKERD"
wait "$DOCKERD" 2>/dev/null || true
# its containerd follows it (parent-death signal); let it be gone first
for _ in $(seq 40); do kill -0 "$old_containerd" 2>/dev/null || break; sleep 0.25; done
dockerd_start slave
settle 1

"$DK" rm -f c1 >/dev/null
settle 1

# Docker 20.10's restore removes `merged` (on this kernel the rmdir detaches
# the old namespace's copy; RHEL 7 fails it with EBUSY). What stays in the
# old namespace are the sandbox network namespaces the first generation
# bound under exec/netns (the new one logs "failed get network namespace").
# Unmounting c1's from dockerd's namespace, as dockerd <= 18 unmounted
# `merged`, fails with EINVAL: it is mounted only in the old namespace.
nsenter -t "$(cat "$W/dockerd.pid")" -m umount "$sandbox" || true
settle 1

# mntleak release detaches the sandbox's copy from the old generation's
# namespace; c2's shim keeps running.
release_point
