# Shared by the scenario scripts (sourced). Each scenario:
#  - runs inside a "node" mount namespace whose / is made rshared, as
#    systemd does on a real host (this VM's / is private, no systemd);
#  - works under W=/var/lib/mntleak-scenarios/<name>, a stable path so the
#    recorded streams and golden findings do not change between runs;
#  - gives its actors distinctive names (dockerd, runc, containerd-shim,
#    node_exporter...) by running copies of bash, mount and sleep;
#  - cleans up on exit: kills what it started (by pid), detaches loop
#    devices; the node namespace and all its mounts go with its processes.
set -euo pipefail

SCENARIO=$(basename "$(dirname "$(readlink -f "$0")")")
W=/var/lib/mntleak-scenarios/$SCENARIO

if [ -z "${MNTLEAK_NODE:-}" ]; then
	export MNTLEAK_NODE=1
	mkdir -p "$W"
	# The node namespace: everything below happens in it.
	unshare -m --propagation shared "$0" "$@"
	rc=$?
	rm -rf "$W"
	rmdir "$(dirname "$W")" 2>/dev/null || true # the last one out
	exit $rc
fi

source "$(dirname "$(readlink -f "${BASH_SOURCE[0]}")")/common.sh"

cleanup() {
	set +e
	# Under the end-to-end test, the state is kept a moment for the oracle
	# to check the last findings against it (MNTLEAK_HOLD seconds).
	sleep "${MNTLEAK_HOLD:-0}"
	for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do kill -9 "${PIDS[i]}" 2>/dev/null; done
	for p in "${PIDS[@]}"; do wait "$p" 2>/dev/null; done
	# Namespaces die with their processes; give the kernel a moment to
	# release the filesystems before detaching their devices.
	for l in "${LOOPS[@]}"; do
		for _ in $(seq 50); do losetup -d "$l" 2>/dev/null && break; sleep 0.1; done
	done
	for z in "${ZRAMS[@]}"; do
		for _ in $(seq 50); do
			{ echo 1 >"/sys/block/zram$z/reset" && echo "$z" >/sys/class/zram-control/hot_remove; } 2>/dev/null && break
			sleep 0.1
		done
	done
}
trap cleanup EXIT

# tracing_begins: what the scenario did so far happened before tracing
# began. A harness (record.sh, correlate's TestCausesEndToEnd) that finds
# this call in a run.sh starts the script first, with MNTLEAK_GATE=FILE,
# waits for FILE.ready, starts tracing, then writes FILE.go; without
# MNTLEAK_GATE (a run by hand) it does nothing.
tracing_begins() {
	[ -n "${MNTLEAK_GATE:-}" ] || return 0
	touch "$MNTLEAK_GATE.ready"
	for _ in $(seq 600); do [ -e "$MNTLEAK_GATE.go" ] && return 0; sleep 0.05; done
	echo "tracing did not begin within 30 s" >&2
	return 1
}

mkdir -p "$W/bin"
expect node_ns "$(nsof $$)"
