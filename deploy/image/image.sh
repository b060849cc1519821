#!/usr/bin/env bash
# Builds mntleak's image with the local Docker Engine, pulling nothing.
#
#   image.sh build          bin/image/mntleak (static), then mntleak:VERSION
#   image.sh tar            build, then bin/mntleak-VERSION.oci.tar: an OCI
#                           image layout that docker load and ctr images
#                           import both accept (MNTLEAK_IMAGE_TAR: elsewhere)
#
# The engine: the one DOCKER_HOST (or /var/run/docker.sock) names when it
# answers; else a private dockerd started for this run and stopped after
# it, with its data root in MNTLEAK_ENGINE_DIR (default
# /var/cache/mntleak-image, kept: the image stays there for the next run),
# its exec root and socket in MNTLEAK_ENGINE_DIR/run, in a mount namespace
# of its own whose / is rshared as systemd makes it (this machine has no
# systemd and a private /): its mounts go with it.
set -euo pipefail
cd "$(dirname "$0")/../.."

GO=${GO:-go}
VERSION=$(cat VERSION)
TAG=mntleak:$VERSION
TAR=${MNTLEAK_IMAGE_TAR:-bin/mntleak-$VERSION.oci.tar}
ENGINE_DIR=${MNTLEAK_ENGINE_DIR:-/var/cache/mntleak-image}
DOCKERD_PID=

die() { echo "image.sh: $*" >&2; exit 1; }

engine_up() { docker version >/dev/null 2>&1; }

start_engine() {
	command -v dockerd >/dev/null || die "dockerd not found (apt-get install docker.io)"
	local run=$ENGINE_DIR/run
	mkdir -p "$ENGINE_DIR/data" "$run"
	export DOCKER_HOST=unix://$run/docker.sock
	unshare -m --propagation shared dockerd --data-root "$ENGINE_DIR/data" --exec-root "$run/exec" \
		-H "$DOCKER_HOST" --pidfile "$run/dockerd.pid" --iptables=false --bridge=none \
		--ip-forward=false --ip-masq=false --storage-driver overlay2 --log-level warn \
		>>"$ENGINE_DIR/dockerd.log" 2>&1 &
	DOCKERD_PID=$!
	trap stop_engine EXIT
	for _ in $(seq 240); do
		engine_up && return 0
		kill -0 "$DOCKERD_PID" 2>/dev/null || die "dockerd exited: $(tail -3 "$ENGINE_DIR/dockerd.log")"
		sleep 0.25
	done
	die "dockerd did not answer on $DOCKER_HOST in 60 s: $(tail -3 "$ENGINE_DIR/dockerd.log")"
}

stop_engine() {
	[ -n "$DOCKERD_PID" ] || return 0
	kill -TERM "$DOCKERD_PID" 2>/dev/null || true
	for _ in $(seq 120); do kill -0 "$DOCKERD_PID" 2>/dev/null || break; sleep 0.25; done
	kill -KILL "$DOCKERD_PID" 2>/dev/null || true
	DOCKERD_PID=
}

build() {
	mkdir -p bin/image
	CGO_ENABLED=0 $GO build -trimpath -ldflags "-s -w -X main.stampedVersion=$VERSION" -o bin/image/mntleak ./cmd/mntleak
	engine_up || start_engine
	# The classic builder: BuildKit needs the buildx plugin, which Debian's
	# docker.io lacks; FROM scratch and COPY need nothing more.
	DOCKER_BUILDKIT=0 docker build -q -f Dockerfile -t "$TAG" bin/image >/dev/null
	echo "built $TAG ($(docker image inspect -f '{{.Id}}' "$TAG"))"
}

case "${1:-}" in
build) build ;;
tar)
	build
	tmp=$(mktemp -d)
	docker save -o "$tmp/save.tar" "$TAG"
	$GO run ./internal/ociarchive -in "$tmp/save.tar" -out "$TAR" -ref "$TAG"
	rm -rf "$tmp"
	echo "wrote $TAR"
	;;
*) die "usage: image.sh build|tar" ;;
esac
