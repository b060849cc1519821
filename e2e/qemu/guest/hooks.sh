#!/bin/bash
# Runs in the lab guest as lab-test.service in place of run.sh (lab.sh exec
# e2e/qemu/guest/hooks.sh OUT mntleak [mntleak-before] [tracer.test]
# [hookbench] [hookbench.rounds]): what the hook paths (docs/hooks.md) need
# a kernel with BPF trampolines for. Results go to /lab/out:
#   - hooks-test.txt, hooks-test.rc: tracer.test -test.run
#     '^TestHooksSameEvents$' (a static `go test -c ./tracer`);
#   - startup.txt: one line per start, "BINARY HOOKS MS ms", milliseconds from
#     `mntleak trace` to its "tracing" line, the trampoline path and the
#     tracepoint path of /lab/mntleak, then the trampoline path of
#     /lab/mntleak-before when the payload has it (a build to compare with);
#     each start's log in startup-BINARY-HOOKS.log;
#   - hookbench.txt, hookbench.rc: hookbench /lab/mntleak ROUNDS.
# Then done, and the guest powers off.
out=/lab/out
exec >"$out/run.log" 2>&1
set -x
uname -r >"$out/kernel"
cut -d' ' -f1 /proc/uptime >"$out/boot-seconds"
/lab/mntleak version >"$out/version.txt" 2>&1

# startup BIN HOOKS: start BIN trace on HOOKS, wait for its tracing line
# (at most 10 min), stop it.
startup() {
	local bin=$1 hooks=$2 log pid t0 ok=no
	log=$out/startup-$(basename "$bin")-$hooks.log
	t0=$(date +%s%N)
	"$bin" trace --hooks="$hooks" --format=json --output=/dev/null --journald=off --state-dir= \
		--k8s-events=false --log-format=json --log-level=info 2>"$log" &
	pid=$!
	for _ in $(seq 6000); do
		grep -q '"msg":"tracing"' "$log" && { ok=yes; break; }
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	if [ "$ok" = yes ]; then
		echo "$(basename "$bin") $hooks $((($(date +%s%N) - t0) / 1000000)) ms" >>"$out/startup.txt"
	else
		echo "$(basename "$bin") $hooks failed" >>"$out/startup.txt"
	fi
	kill "$pid" 2>/dev/null
	wait "$pid"
	sync
}

# The verdict first (a run cut short keeps it: sync), then the timings.
if [ -x /lab/tracer.test ]; then
	(cd /tmp && MNTLEAK_REQUIRE_BPF=1 /lab/tracer.test -test.v -test.count=1 -test.timeout=60m \
		-test.run '^TestHooksSameEvents$') >"$out/hooks-test.txt" 2>&1
	echo $? >"$out/hooks-test.rc"
	sync
fi
startup /lab/mntleak trampoline
startup /lab/mntleak tracepoint
[ ! -x /lab/mntleak-before ] || startup /lab/mntleak-before trampoline

if [ -x /lab/hookbench ]; then
	/lab/hookbench /lab/mntleak "$(cat /lab/hookbench.rounds 2>/dev/null || echo 3)" >"$out/hookbench.txt" 2>&1
	echo $? >"$out/hookbench.rc"
fi
touch "$out/done"
sync
systemctl poweroff
