#!/usr/bin/env bash
# Incident 4 (seed 003): a ConfigMap file mounted with subPath. kubelet's
# atomic writer keeps the data in a timestamped directory behind ..data and
# binds the resolved file at volume-subpaths/…/0; the ConfigMap is updated
# (new timestamped directory, ..data_tmp renamed over ..data, the old one
# deleted); the container is started again and binding the subpath fails
# with ENOENT.
source "$(dirname "$(readlink -f "$0")")/lib.sh"
dockerd_start
image
fakebin kubelet mount

pod=$W/pods/e044883a-48da-4d28-b304-1a57dcb32203
vol=$pod/volumes/kubernetes.io~configmap/extra-cfg
old=..2020_03_29_03_12_44.788930127
new=..2020_03_29_03_40_02.102938475
mkdir -p "$vol/$old" && echo somedata >"$vol/$old/extra.ini"
ln -s "$old" "$vol/..data" && ln -s ..data/extra.ini "$vol/extra.ini"
sub=$pod/volume-subpaths/extra-cfg/test/0
mkdir -p "$(dirname "$sub")" && touch "$sub"
"$W/bin/kubelet" --bind "$vol/$old/extra.ini" "$sub"
expect holder_ns "$(nsof $$)"

"$DK" create --network none --name test -v "$sub:/etc/extra.ini" "$IMG" sleep 1 >/dev/null
"$DK" start -a test
settle

# The ConfigMap is updated.
mkdir "$vol/$new" && echo newdata >"$vol/$new/extra.ini"
ln -s "$new" "$vol/..data_tmp" && mv -T "$vol/..data_tmp" "$vol/..data"
rm -rf "${vol:?}/$old"
settle

# The container exited; kubelet starts it again.
if "$DK" start test >/dev/null 2>&1; then echo "restart unexpectedly succeeded" >&2; exit 1; fi
settle 1

# mntleak release refuses: a stale bind is not a leak.
release_point
