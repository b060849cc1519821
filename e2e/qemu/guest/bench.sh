#!/bin/bash
# Runs in the lab guest as lab-test.service in place of run.sh (lab.sh
# bench: make lab-bench): hookbench (guest/hookbench) in one boot, with
# bpftrace when the payload carries its packages (debs/: Debian's bpftrace
# and what the image lacks of its dependencies, which lab.sh downloads;
# installed here, in the guest's throwaway overlay). Results go to
# /lab/out: bpftrace.txt (its install, its version), hookbench.txt and
# hookbench.rc (hookbench /lab/mntleak ROUNDS). Then done, and the guest
# powers off.
out=/lab/out
exec >"$out/run.log" 2>&1
set -x
uname -r >"$out/kernel"
cut -d' ' -f1 /proc/uptime >"$out/boot-seconds"
/lab/mntleak version >"$out/version.txt" 2>&1
if [ -d /lab/debs ]; then
	{ dpkg -i /lab/debs/*.deb && bpftrace --version; } >"$out/bpftrace.txt" 2>&1
fi
# bpftrace finds the tracepoints through tracefs.
mountpoint -q /sys/kernel/tracing || mount -t tracefs tracefs /sys/kernel/tracing
(cd /tmp && /lab/hookbench /lab/mntleak "$(cat /lab/hookbench.rounds 2>/dev/null || echo 3)") >"$out/hookbench.txt" 2>&1
echo $? >"$out/hookbench.rc"
touch "$out/done"
sync
systemctl poweroff
