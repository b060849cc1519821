#!/usr/bin/env bash
# A private namespace's process forks a worker into its copy of a tmpfs
# after the namespace was made (forks are not traced: no process list has
# seen it when the leak forms). The node unmounts the tmpfs: the leak names
# the worker, whose cwd pins the copy, not the namespace's oldest process.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin keeper sleep
fakebin worker sleep

mkdir -p "$W/vol"
mount -t tmpfs scratch "$W/vol"
settle
bg unshare -m --propagation private sh -c "touch $W/ns.ready; while [ ! -e $W/go ]; do sleep 0.05; done; (cd $W/vol && exec $W/bin/worker 600) & echo \$! >$W/worker.tmp && mv $W/worker.tmp $W/worker.pid; exec $W/bin/keeper 600"
keeper=$!
wait_file "$W/ns.ready"
settle
touch "$W/go"
wait_file "$W/worker.pid"
worker=$(cat "$W/worker.pid")
PIDS+=("$worker")
expect holder_pid "$worker"
expect holder_ns "$(nsof "$keeper")"
settle
umount "$W/vol"
# mntleak reports a leak once the teardown has settled (2 s), on the first
# event after that: a short-lived namespace, while the worker still runs.
settle 2.5
unshare -m true
settle
