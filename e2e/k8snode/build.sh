#!/bin/bash
# build.sh [VERSION] — build the node's Kubernetes binaries from the Go module proxy into the cache
# (/var/cache/mntleak-k8s/v$VERSION/bin): kube-apiserver, kube-controller-manager, kube-scheduler,
# kubelet, kubectl and crimini (e2e/k8snode/_crimini, a small CRI client), plus the two local images
# (images.sh). A no-op (well under a second) when the cache's stamp matches: the version, the
# commands, crimini's source and images.sh. The first build takes 5 min on 2 idle cores (17 min
# measured with four other agents' builds and tests running).
#
# k8s.io/kubernetes requires its staging modules as v0.0.0 (its own go.mod replaces them with
# ./staging/..., which does not apply to a consumer), so the scratch module replaces each one with
# the published v0.MINOR.PATCH.
set -euo pipefail
V=${1:-${K8S_VERSION:-1.37.2}}; MINOR=${V#1.}
HERE=$(cd "$(dirname "$0")" && pwd)
CACHE=${MNTLEAK_K8S_CACHE:-/var/cache/mntleak-k8s}/v$V
W=$CACHE/build; BIN=$CACHE/bin
export PATH=/usr/local/go/bin:$PATH GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod
CMDS="kube-apiserver kube-controller-manager kube-scheduler kubelet kubectl"
stamp="v$V $CMDS crimini $(cat "$HERE/_crimini/main.go" "$HERE/images.sh" | sha256sum | cut -d' ' -f1)"
if [ "$(cat "$CACHE/stamp" 2>/dev/null)" = "$stamp" ]; then exit 0; fi
mkdir -p "$W/cmd/crimini" "$BIN"; cd "$W"
t0=$(date +%s)
go mod download -json "k8s.io/kubernetes@v$V" >/dev/null
cp "$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/v$V.mod" "k8s-$V.mod"
{ echo "module mntleak-k8s/build"; echo; echo "go $(awk '$1=="go"{print $2}' "k8s-$V.mod")"; echo
  echo "require k8s.io/kubernetes v$V"; echo; echo "replace ("
  sed -n '/^replace (/,/^)/p' "k8s-$V.mod" | awk '/=> \.\/staging/{print $1}' |
    grep -v -e sample-cli-plugin -e sample-controller | while read -r m; do printf '\t%s => %s v0.%s\n' "$m" "$m" "$MINOR"; done
  echo ")"; } > go.mod
{ printf '//go:build tools\n\npackage tools\n\nimport (\n'
  for c in $CMDS; do printf '\t_ "k8s.io/kubernetes/cmd/%s"\n' "$c"; done; printf ')\n'; } > tools.go
cp "$HERE/_crimini/main.go" cmd/crimini/main.go
go mod tidy
LD="-s -w -X k8s.io/component-base/version.gitVersion=v$V -X k8s.io/component-base/version.gitMajor=1"
LD="$LD -X k8s.io/component-base/version.gitMinor=${MINOR%%.*} -X k8s.io/client-go/pkg/version.gitVersion=v$V"
for c in $CMDS; do s=$(date +%s)
  go build -trimpath -ldflags "$LD" -o "$BIN/$c" "k8s.io/kubernetes/cmd/$c"
  echo "built $c in $(( $(date +%s) - s ))s ($(du -h "$BIN/$c" | cut -f1))"
done
go build -trimpath -ldflags "-s -w" -o "$BIN/crimini" ./cmd/crimini
K8S_SRC=$(go list -m -f '{{.Dir}}' k8s.io/kubernetes) "$HERE/images.sh" "$CACHE/img"
"$BIN/kubelet" --version
echo "$stamp" > "$CACHE/stamp"
echo "build of v$V took $(( $(date +%s) - t0 ))s"
