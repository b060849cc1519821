#!/usr/bin/env bash
# Seed 003: a ConfigMap file mounted with subPath. kubelet's atomic writer
# keeps the data in a timestamped directory behind the ..data symlink and
# binds the resolved file at volume-subpaths/…/0. An update writes a new
# timestamped directory, renames ..data_tmp over ..data and deletes the old
# one; the bind now shows a deleted file, and starting the container again
# (binding the subpath into its rootfs) fails with ENOENT. Not a leak.
source "$(dirname "$(readlink -f "$0")")/../lib.sh"
fakebin kubelet mount
fakebin runc mount

pod=$W/pods/e044883a-48da-4d28-b304-1a57dcb32203
vol=$pod/volumes/kubernetes.io~configmap/extra-cfg
old=..2020_03_29_03_12_44.788930127
new=..2020_03_29_03_40_02.102938475
mkdir -p "$vol/$old" && echo somedata >"$vol/$old/extra.ini"
ln -s "$old" "$vol/..data" && ln -s ..data/extra.ini "$vol/extra.ini"
sub=$pod/volume-subpaths/extra-cfg/test/0
mkdir -p "$(dirname "$sub")" && touch "$sub"
expect holder_ns "$(nsof $$)"
"$W/bin/kubelet" --bind "$vol/$old/extra.ini" "$sub"
settle

# The ConfigMap is updated (atomic writer).
mkdir "$vol/$new" && echo newdata >"$vol/$new/extra.ini"
ln -s "$new" "$vol/..data_tmp" && mv -T "$vol/..data_tmp" "$vol/..data"
rm -rf "${vol:?}/$old"
settle

# The container exits and is started again.
rootfs=$W/docker/overlay2/31b076d0/merged
mkdir -p "$rootfs/etc" && touch "$rootfs/etc/extra.ini"
if "$W/bin/runc" --bind "$sub" "$rootfs/etc/extra.ini" 2>/dev/null; then echo "bind unexpectedly succeeded" >&2; exit 1; fi
settle
