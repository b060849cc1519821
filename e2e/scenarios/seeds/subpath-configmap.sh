# Seed 003 (../shared/seeds/003_*): a ConfigMap file mounted with subPath.
# kubelet's atomic writer keeps the data in a timestamped directory behind
# the ..data symlink and binds the resolved file at volume-subpaths/…/0. An
# update writes a new timestamped directory, renames ..data_tmp over ..data
# and deletes the old one; the bind now shows a deleted file, and starting
# the container again (binding the subpath into its rootfs) fails with
# ENOENT. Not a leak.
#
# seed_subpath_configmap START AGAIN: the story, told with the harness's
# own
#   START SUB    the container's first start, SUB bound into it (none:
#                true)
#   AGAIN SUB    starting it again, binding SUB (must fail)
seed_subpath_configmap() {
	local pod=$W/pods/e044883a-48da-4d28-b304-1a57dcb32203
	local vol=$pod/volumes/kubernetes.io~configmap/extra-cfg
	local old=..2020_03_29_03_12_44.788930127
	local new=..2020_03_29_03_40_02.102938475
	local sub=$pod/volume-subpaths/extra-cfg/test/0
	fakebin kubelet mount
	mkdir -p "$vol/$old" && echo somedata >"$vol/$old/extra.ini"
	ln -s "$old" "$vol/..data" && ln -s ..data/extra.ini "$vol/extra.ini"
	mkdir -p "$(dirname "$sub")" && touch "$sub"
	expect holder_ns "$(nsof $$)"
	"$W/bin/kubelet" --bind "$vol/$old/extra.ini" "$sub"
	"$1" "$sub"
	settle

	# The ConfigMap is updated (atomic writer).
	mkdir "$vol/$new" && echo newdata >"$vol/$new/extra.ini"
	ln -s "$new" "$vol/..data_tmp" && mv -T "$vol/..data_tmp" "$vol/..data"
	rm -rf "${vol:?}/$old"
	settle

	# The container exits and is started again.
	must_fail "$2" "$sub"
	settle
}
