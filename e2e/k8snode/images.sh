#!/bin/bash
# images.sh OUTDIR — build the node's two local images as docker-archive tars for
# `ctr images import` (no registry is reachable): OUTDIR/pause.tar (registry.k8s.io/pause:3.10,
# the static pause from k8s.io/kubernetes/build/pause/linux/pause.c, K8S_SRC is that module's
# directory) and OUTDIR/busybox.tar (docker.io/library/busybox:k8slab, Debian's busybox-static).
set -euo pipefail
OUT=$1; : "${K8S_SRC:?K8S_SRC must name the k8s.io/kubernetes module directory}"
mkdir -p "$OUT"; w=$(mktemp -d /tmp/mntleak-k8s-img.XXXXXX); trap 'rm -rf "$w"' EXIT
# mkimage ROOTFS REF OUT ENTRYPOINT-JSON CMD-JSON: one layer, a config and a manifest.json
mkimage() {
  local root=$1 ref=$2 out=$3 ep=$4 cmd=$5 t diffid cid
  t=$(mktemp -d "$w/img.XXXXXX")
  tar --numeric-owner --owner=0 --group=0 --sort=name --mtime=@0 -C "$root" -cf "$t/layer.tar" .
  diffid=$(sha256sum "$t/layer.tar" | cut -d' ' -f1); mkdir "$t/$diffid"; mv "$t/layer.tar" "$t/$diffid/layer.tar"
  printf '{"architecture":"%s","os":"linux","config":{"Entrypoint":%s,"Cmd":%s,"Env":["PATH=/bin:/sbin:/usr/bin"],"WorkingDir":"/"},"rootfs":{"type":"layers","diff_ids":["sha256:%s"]},"history":[{"created_by":"mntleak k8slab images.sh"}]}' \
    "$(dpkg --print-architecture)" "$ep" "$cmd" "$diffid" > "$t/config.json"
  cid=$(sha256sum "$t/config.json" | cut -d' ' -f1); mv "$t/config.json" "$t/$cid.json"
  printf '[{"Config":"%s.json","RepoTags":["%s"],"Layers":["%s/layer.tar"]}]' "$cid" "$ref" "$diffid" > "$t/manifest.json"
  tar -C "$t" -cf "$out" manifest.json "$cid.json" "$diffid"
}
mkdir -p "$w/pause" "$w/bb/bin" "$w/bb/tmp" "$w/bb/etc" "$w/bb/proc" "$w/bb/sys" "$w/bb/dev"
gcc -Os -static -Wall -DVERSION=v3.10-mntleak -o "$w/pause/pause" "$K8S_SRC/build/pause/linux/pause.c"
strip "$w/pause/pause"
cp /bin/busybox "$w/bb/bin/busybox"
for a in $(/bin/busybox --list); do [ "$a" = busybox ] || ln -sf busybox "$w/bb/bin/$a"; done
echo 'root:x:0:0:root:/:/bin/sh' > "$w/bb/etc/passwd"; echo 'root:x:0:' > "$w/bb/etc/group"
mkimage "$w/pause" registry.k8s.io/pause:3.10 "$OUT/pause.tar" '["/pause"]' null
mkimage "$w/bb" docker.io/library/busybox:k8slab "$OUT/busybox.tar" null '["sh"]'
echo "images: $(du -h "$OUT/pause.tar" | cut -f1) pause, $(du -h "$OUT/busybox.tar" | cut -f1) busybox"
