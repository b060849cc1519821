#!/usr/bin/env bash
# Records scenarios with the real daemon: `mntleak trace --record` runs while
# the scenario's run.sh makes the incident happen, and the stream (events
# plus the /proc snapshots the correlator read) is kept as stream.jsonl.
# Then `go test ./correlate -run TestGolden -update` rewrites the goldens.
# No persistent lineage (--state-dir ""): a replay remembers nothing either.
# With MNTLEAK_RECORD_DIR set, each stream goes there as NAME.jsonl instead
# (a check that a scenario still records its finding, committed streams
# untouched: compare `mntleak replay` of it with the golden).
#   usage: e2e/scenarios/record.sh [NAME...]   (root)
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
top=$(readlink -f "$here/../..")
cd "$top"
go build -o bin/mntleak ./cmd/mntleak
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	# Every folder with a run.sh (seeds/ is the seeds' stories, no scenario).
	for d in "$here"/*/run.sh; do names+=("$(basename "$(dirname "$d")")"); done
fi
for name in "${names[@]}"; do
	dir=$here/$name
	stream=$dir/stream.jsonl
	[ -z "${MNTLEAK_RECORD_DIR:-}" ] || stream=$MNTLEAK_RECORD_DIR/$name.jsonl
	log=$(mktemp)
	status=0
	gate=""
	# A scenario that calls tracing_begins (lib.sh) makes part of its
	# situation before tracing: it runs first, and tracing starts when it
	# says so.
	if grep -q '^tracing_begins' "$dir/run.sh"; then
		gate=$(mktemp -u)
		MNTLEAK_GATE=$gate "$dir/run.sh" &
		script=$!
		for _ in $(seq 600); do [ -e "$gate.ready" ] && break; sleep 0.05; done
	fi
	./bin/mntleak trace --record "$stream" --state-dir "" --format json --log-format json >/dev/null 2>"$log" &
	daemon=$!
	for _ in $(seq 100); do grep -q '"msg":"tracing"' "$log" && break; sleep 0.05; done
	if [ -n "$gate" ]; then
		touch "$gate.go"
		wait "$script" || status=$?
		rm -f "$gate.ready" "$gate.go"
	else
		"$dir/run.sh" || status=$?
	fi
	sleep 0.5
	kill -INT "$daemon"
	wait "$daemon" || status=$?
	echo "== $name: $(grep -c . "$stream") lines recorded, run status $status"
	grep -E '"level":"(warn|error)"' "$log" | cut -c1-400 || true
	rm -f "$log"
	[ "$status" -eq 0 ] || exit "$status"
done
