package correlate

import (
	"testing"
	"time"

	"github.com/mntleak/mntleak/procfs"
)

// A table may hold a removed directory (a layer) when it has an overlay,
// which may use the directory as a layer, and not when it has none.
func TestMayHoldALayerOnlyThroughAnOverlay(t *testing.T) {
	id := identity{path: "/var/lib/containers/l/abc", layers: true}
	devtmpfs := procfs.NewMount(120, 120, procfs.MountShape{Major: 0, Minor: 6, Root: "/", Mountpoint: "/", FSType: "devtmpfs", Source: "devtmpfs"})
	overlay := procfs.NewMount(121, 120, procfs.MountShape{Major: 0, Minor: 90, Root: "/", Mountpoint: "/run/c/rootfs", FSType: "overlay", Source: "overlay",
		VFSOptions: "rw,lowerdir=/var/lib/containers/l/def,upperdir=/var/lib/containers/u,workdir=/var/lib/containers/w"})
	if mayHold(NewTable(96, []*procfs.Mount{devtmpfs}, time.Time{}, 0), id, nil) {
		t.Errorf("a table with no overlay: may hold the layer, want not")
	}
	if !mayHold(NewTable(97, []*procfs.Mount{devtmpfs, overlay}, time.Time{}, 0), id, nil) {
		t.Errorf("a table with an overlay: may not hold the layer, want it may")
	}
}
