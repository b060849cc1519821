#!/usr/bin/env bash
# Records scenarios with the real daemon: `mntleak trace --record` runs while
# the scenario's run.sh makes the incident happen, and the stream (events
# plus the /proc snapshots the correlator read) is kept as stream.jsonl.
# Then `go test ./correlate -run TestGolden -update` rewrites the goldens.
# No persistent lineage (--state-dir ""): a replay remembers nothing either.
#   usage: e2e/scenarios/record.sh [NAME...]   (root)
set -euo pipefail
here=$(dirname "$(readlink -f "$0")")
top=$(readlink -f "$here/../..")
cd "$top"
go build -o bin/mntleak ./cmd/mntleak
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
	for d in "$here"/*/; do names+=("$(basename "$d")"); done
fi
for name in "${names[@]}"; do
	dir=$here/$name
	log=$(mktemp)
	./bin/mntleak trace --record "$dir/stream.jsonl" --state-dir "" --format json --log-format json >/dev/null 2>"$log" &
	daemon=$!
	for _ in $(seq 100); do grep -q '"msg":"tracing"' "$log" && break; sleep 0.05; done
	status=0
	"$dir/run.sh" || status=$?
	sleep 0.5
	kill -INT "$daemon"
	wait "$daemon" || status=$?
	echo "== $name: $(grep -c . "$dir/stream.jsonl") lines recorded, run status $status"
	grep -E '"level":"(warn|error)"' "$log" | cut -c1-400 || true
	rm -f "$log"
	[ "$status" -eq 0 ] || exit "$status"
done
