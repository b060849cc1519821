#!/usr/bin/env bash
# Control: the same Docker, 20 containers started and removed, no leak.
source "$(dirname "$(readlink -f "$0")")/lib.sh"
dockerd_start
image
for i in $(seq 20); do
	"$DK" run -d --network none --name "churn-$i" -v "$W/shared:/shared" "$IMG" sleep 60 >/dev/null
	[ "$i" -gt 2 ] && "$DK" rm -f "churn-$((i - 2))" >/dev/null
done
"$DK" rm -f churn-19 churn-20 >/dev/null
settle 1
