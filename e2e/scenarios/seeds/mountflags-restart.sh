# Seed 001 (../shared/seeds/001_*): dockerd under systemd with
# MountFlags=slave (a slave namespace of its own) and live-restore. It
# mounts what its containers need in its namespace (an overlay `merged`,
# the sandboxes' network namespaces) and starts containerd-shim; dockerd
# dies and is started again into a new namespace; the shims survive in the
# old one. Unmounting one of those mounts from the new dockerd's namespace
# fails with EINVAL: it is mounted only in the old one, which the shims
# keep alive.
#
# seed_mountflags_restart START RESTART UNMOUNT: the story, told with the
# harness's own
#   START        dockerd's first generation in a slave namespace, with its
#                containers: the shim that survives in HOLDER, what the
#                generation mounted in its namespace in OBJECT
#   RESTART      dockerd dies without cleaning up and is started the same
#                way (a new slave namespace)
#   UNMOUNT OBJ  the new generation unmounts OBJ in its namespace (must
#                fail)
seed_mountflags_restart() {
	"$1"
	expect_holder "$HOLDER"
	settle
	"$2"
	settle
	must_fail "$3" "$OBJECT"
	settle
}

# mountflags_containers: with a Docker Engine that restores its containers
# (live-restore), c1 and c2 run; OBJECT is c1's sandbox (a network
# namespace bound under dockerd's exec root, in dockerd's namespace only),
# SHIM1 and SHIM2 their containerd-shims.
mountflags_containers() {
	local dk=${DK:-docker} c
	"$dk" run -d --network none --name c1 "$IMG" sleep 3600 >/dev/null
	"$dk" run -d --network none --name c2 "$IMG" sleep 3600 >/dev/null
	OBJECT=$("$dk" inspect -f '{{.NetworkSettings.SandboxKey}}' c1)
	c=$("$dk" inspect -f '{{.Id}}' c1)
	SHIM1=$(pgrep -f "containerd-shim-runc-v2 .*-id $c" | head -1)
	c=$("$dk" inspect -f '{{.Id}}' c2)
	SHIM2=$(pgrep -f "containerd-shim-runc-v2 .*-id $c" | head -1)
}
