# Shared by the incident scripts (sourced). Each incident runs in a "node"
# mount namespace whose / is rshared, as systemd makes it on a real host
# (this VM's / is private and it has no systemd), with its own Docker Engine
# (Debian's docker.io: dockerd, its containerd and runc) whose data root,
# exec root and socket live under W=/var/lib/mntleak-incidents/<incident>.
# Everything it starts is removed on exit: containers, daemons (by pid),
# loop devices; the node namespace takes its mounts with it.
set -euo pipefail

INCIDENT=$(basename "$0" .sh)
W=/var/lib/mntleak-incidents/$INCIDENT
if [ -z "${MNTLEAK_NODE:-}" ]; then
	export MNTLEAK_NODE=1
	mkdir -p "$W"
	rc=0
	unshare -m --propagation shared "$0" "$@" || rc=$?
	rm -rf "$W"
	rmdir "$(dirname "$W")" 2>/dev/null || true # the last one out
	exit $rc
fi

DK=/usr/bin/docker
export DOCKER_HOST=unix://$W/docker.sock
IMG=mntleak/busybox
DOCKERD=
SETTLE=0.5
source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/../../scenarios/common.sh"

# dockerd_start [slave]: start dockerd as systemd would; with "slave", as a
# unit with MountFlags=slave does (a new mount namespace, / made slave).
dockerd_start() {
	local pre=()
	[ "${1:-}" = slave ] && pre=(unshare -m --propagation slave)
	"${pre[@]}" dockerd --data-root "$W/data" --exec-root "$W/exec" -H "$DOCKER_HOST" \
		--pidfile "$W/dockerd.pid" --iptables=false --bridge=none --ip-forward=false --ip-masq=false \
		--storage-driver overlay2 --log-level warn ${DOCKERD_FLAGS:-} >>"$W/dockerd.log" 2>&1 &
	DOCKERD=$!
	for _ in $(seq 120); do
		"$DK" version >/dev/null 2>&1 && return 0
		sleep 0.25
	done
	echo "dockerd did not start" >&2
	tail -5 "$W/dockerd.log" >&2
	return 1
}

# release_point [CMD...]: with MNTLEAK_RELEASE set (a directory), the test
# releases the leak now with mntleak release: the script says it is ready,
# waits for the test, then runs CMD, the operation that failed, and records
# whether it succeeds this time (after_release=ok|failed).
release_point() {
	[ -n "${MNTLEAK_RELEASE:-}" ] || return 0
	touch "$MNTLEAK_RELEASE/ready"
	for _ in $(seq 1200); do [ -e "$MNTLEAK_RELEASE/go" ] && break; sleep 0.1; done
	[ -e "$MNTLEAK_RELEASE/go" ] || { echo "the test never released" >&2; return 1; }
	[ $# -gt 0 ] || return 0
	if "$@"; then expect after_release ok; else expect after_release failed; fi
}

# ours /proc/PID: the process is this incident's: its command line names
# $W, or its root is an overlay from $W's storage. Builtins only: a fork
# for each process took minutes on a loaded machine.
ours() {
	local args mp rest
	mapfile -d "" args 2>/dev/null <"$1/cmdline" || return 1
	[[ "${args[*]}" == *"$W"* ]] && return 0
	while read -r _ _ _ _ mp rest; do
		[ "$mp" = / ] && [[ "$rest" == *"$W/data/overlay2"* ]] && return 0
	done 2>/dev/null <"$1/mountinfo"
	return 1
}

cleanup() {
	set +e
	if [ -n "$DOCKERD" ] && kill -0 "$DOCKERD" 2>/dev/null; then
		ids=$("$DK" ps -aq)
		[ -n "$ids" ] && "$DK" rm -f $ids >/dev/null 2>&1
		kill -TERM "$DOCKERD"
		for _ in $(seq 60); do kill -0 "$DOCKERD" 2>/dev/null || break; sleep 0.25; done
	fi
	for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
	# containerd and shims of this incident's daemons (their command lines
	# name its directories): started by us, killed by pid.
	# Containers whose daemon died before removing them: their root is an
	# overlay from this incident's storage.
	for d in /proc/[0-9]*; do
		ours "$d" && kill -9 "${d#/proc/}" 2>/dev/null
	done
	for l in "${LOOPS[@]}"; do
		for _ in $(seq 50); do losetup -d "$l" 2>/dev/null && break; sleep 0.1; done
	done
	for z in "${ZRAMS[@]}"; do
		for _ in $(seq 50); do
			[ -e "/sys/block/zram$z" ] || break # removed by the script
			{ echo 1 >"/sys/block/zram$z/reset" && echo "$z" >/sys/class/zram-control/hot_remove; } 2>/dev/null && break
			sleep 0.1
		done
	done
}
trap cleanup EXIT
