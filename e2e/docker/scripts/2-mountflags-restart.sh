#!/usr/bin/env bash
# Incident 2 (seed 001, e2e/scenarios/seeds/mountflags-restart.sh) with
# Docker: dockerd started as a MountFlags=slave unit starts it, with
# live-restore; what stays in the old namespace are the sandbox network
# namespaces the first generation bound under exec/netns.
source "$(dirname "$(readlink -f "$0")")/lib.sh"
seed mountflags-restart
DOCKERD_FLAGS=--live-restore

start() {
	dockerd_start slave
	image
	mountflags_containers
	# c1 is removed before the unmount: c2's shim is the survivor named.
	HOLDER=$SHIM2
	settle 1
}
restart() {
	# dockerd dies without cleaning up (a crash, an OOM kill; Docker
	# 20.10's clean shutdown unmounts its mounts first) and systemd starts
	# it again the same way: a new slave namespace.
	local old_containerd
	old_containerd=$(cat "$W/exec/containerd/containerd.pid")
	kill -9 "$DOCKERD"
	wait "$DOCKERD" 2>/dev/null || true
	# its containerd follows it (parent-death signal); let it be gone first
	for _ in $(seq 40); do kill -0 "$old_containerd" 2>/dev/null || break; sleep 0.25; done
	dockerd_start slave
	settle 1
	"$DK" rm -f c1 >/dev/null
	settle 1
}
# Docker 20.10's restore removes `merged` (on this kernel the rmdir
# detaches the old namespace's copy; RHEL 7 fails it with EBUSY).
# Unmounting c1's sandbox from dockerd's namespace, as dockerd <= 18
# unmounted `merged`, fails with EINVAL: it is mounted only in the old
# namespace (the new dockerd logs "failed get network namespace").
unmount() { nsenter -t "$(cat "$W/dockerd.pid")" -m umount "$1"; }
seed_mountflags_restart start restart unmount

# mntleak release detaches the sandbox's copy from the old generation's
# namespace; c2's shim keeps running.
release_point
