#!/bin/bash
# Runs in the lab guest as lab-test.service (real systemd is PID 1): installs
# mntleak with its own systemd unit from deploy/, runs every scenario, saves
# mntleak's journal entries, and powers off. Results go to /lab/out.
out=/lab/out
exec >"$out/run.log" 2>&1
set -x
uname -r >"$out/kernel"
cut -d' ' -f1 /proc/uptime >"$out/boot-seconds"
cat /proc/1/comm >"$out/pid1"
/lab/mntleak version >"$out/version.txt" 2>&1
/lab/mntleak version --json >"$out/version.json" 2>&1
[ ! -x /lab/probe ] || bash /lab/kernel-probe.sh >"$out/kernel-probe.txt" 2>"$out/kernel-probe.err"
install -m 0755 /lab/mntleak /usr/local/bin/mntleak
install -m 0644 /lab/mntleak.service /etc/systemd/system/mntleak.service
# The unit as shipped, plus a recording of what it saw (for a replay of a
# failed lab run): the drop-in only appends --record.
mkdir -p /etc/systemd/system/mntleak.service.d
exec_start=$(sed -n 's/^ExecStart=//p' /lab/mntleak.service)
# daemon ARGS: (re)start the unit with ARGS appended (a scenario's
# "# lab-daemon-args:" line, e.g. --buffer=perf), and wait for its
# "tracing" line.
daemon_args=unset
daemon() {
	[ "$1" = "$daemon_args" ] && return 0
	daemon_args=$1
	printf '[Service]\nExecStart=\nExecStart=%s --record /var/lib/mntleak/lab-record.jsonl %s\n' "$exec_start" "$1" \
		>/etc/systemd/system/mntleak.service.d/lab-record.conf
	systemctl daemon-reload
	systemctl stop mntleak.service
	local since
	since=$(date '+%Y-%m-%d %H:%M:%S')
	systemctl start mntleak.service
	# Up to 10 min: the trampoline path loads the catch-all once per
	# syscall, 3.5 min in the 6.1 guest under TCG on a loaded host.
	for _ in $(seq 1200); do
		journalctl -u mntleak.service -o cat --no-pager --since "$since" | grep -q '"msg":"tracing"' && break
		sleep 0.5
	done
	journalctl -u mntleak.service -o cat --no-pager --since "$since" | grep '"msg":"BPF programs attached"' >/run/lab-attached || true
}
# LAB_HOOKS (the payload's hooks file): "both" runs the daemon on the path
# auto takes and, where that is the trampolines, every scenario again on
# the tracepoints; otherwise (make test) the tracepoint path only: the
# trampoline path's start under TCG (minutes) is make lab's to pay.
lab_hooks=$(cat /lab/hooks 2>/dev/null || echo tracepoint)
main_hooks=--hooks=tracepoint
[ "$lab_hooks" != both ] || main_hooks=
daemon " $main_hooks"
# The oracle (when the payload has it) compares every finding with the
# kernel's state the moment it is logged: it follows mntleak's journal.
if [ -x /lab/oracle ]; then
	(journalctl -f -n all -o json -u mntleak.service --no-pager & echo $! >/run/lab-oracle-journal.pid; wait) |
		/lab/oracle >"$out/oracle.jsonl" 2>"$out/oracle.err" &
	oracle=$!
fi
# scenarios DIR HOOKS: every scenario, results in DIR (all of them: its
# expectations too, lib.sh's LAB_PASS_OUT), the daemon run with HOOKS
# (and the scenario's own arguments).
scenarios() {
	local dir=$1 hooks=$2 s name start
	mkdir -p "$dir"
	for s in /lab/scenarios/*.sh; do
		name=$(basename "$s" .sh)
		daemon "$(sed -n 's/^# lab-daemon-args: //p' "$s") $hooks"
		cp /run/lab-attached "$dir/$name.attached"
		start=$(date +%s)
		# The scenario's window, in the journal's microseconds: its findings
		# are logged within it (or 3 s after: a leak settles 2 s).
		echo "$(date +%s%6N)" >"$dir/$name.window"
		LAB_PASS_OUT=$dir bash "$s" >"$dir/$name.log" 2>&1
		echo "$? $(($(date +%s) - start))" >"$dir/$name.rc"
		sleep 3
		echo "$(date +%s%6N)" >>"$dir/$name.window"
	done
}
# The path auto takes (the trampolines where the kernel has them), then,
# on such a kernel, the tracepoint path too: both must find the same.
scenarios "$out" "$main_hooks"
if [ "$lab_hooks" = both ] && grep -q '^hooks: *trampoline' "$out/version.txt"; then
	scenarios "$out/tracepoint" --hooks=tracepoint
fi
systemctl stop mntleak.service
if [ -n "${oracle:-}" ]; then
	sleep 2 # the last entries reach the oracle
	kill "$(cat /run/lab-oracle-journal.pid)"
	# Never a guest that does not power off: an oracle still busy after
	# 60 s is stopped, and says so.
	for _ in $(seq 120); do kill -0 "$oracle" 2>/dev/null || break; sleep 0.5; done
	if kill -0 "$oracle" 2>/dev/null; then
		kill -9 "$oracle"
		echo "the oracle was still running 60 s after mntleak stopped" >>"$out/oracle.err"
		echo 124 >"$out/oracle.rc"
	else
		wait "$oracle"
		echo "$?" >"$out/oracle.rc"
	fi
fi
journalctl -u mntleak.service -o json --no-pager >"$out/journal.json"
cp /var/lib/mntleak/lab-record.jsonl "$out/record.jsonl"
# What an operator types: the journal's own field match.
for c in private-tmp mountflags-restart; do
	journalctl -o json --no-pager MNTLEAK_CAUSE=$c | wc -l >"$out/journalctl-$c.count"
done
systemctl status mntleak.service --no-pager >"$out/mntleak.status" 2>&1
# Why a scenario's own units failed to start (docker.service under TCG on
# a loaded host), which mntleak's journal does not say.
journalctl -u docker.service -u containerd.service -u 'lab-*' -o short-precise --no-pager >"$out/units.journal" 2>&1
touch "$out/done"
sync
systemctl poweroff
