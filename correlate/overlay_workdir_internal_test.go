package correlate

import "testing"

// TestOverlayWorkdirHoldsItsDirectory: an overlay keeps busy each of its
// layer directories, its workdir too: containerd's snapshotter puts an
// overlay's work directory beside its upper one, and removing only the
// work directory's snapshot fails while the overlay is mounted. Options
// that are not layers (index=off) name no directory.
func TestOverlayWorkdirHoldsItsDirectory(t *testing.T) {
	ns := table(t, 20, `1 0 254:0 / / rw - ext4 /dev/vda rw
2 1 0:77 / /run/containerd/c1/rootfs rw - overlay overlay rw,lowerdir=/snap/1/fs,upperdir=/snap/7/fs,workdir=/snap/8/work,index=off
`)
	for dir, want := range map[string]bool{
		"/snap/8":      true, // the workdir's snapshot
		"/snap/8/work": true,
		"/snap/7":      true, // the upperdir's
		"/snap/1/fs":   true, // the lowerdir
		"off":          false,
		"/snap/9":      false,
	} {
		got := findIn(ns, identity{path: dir, layers: true}, nil)
		if (len(got) == 1 && got[0].ID == 2) != want {
			t.Errorf("removing %s: found %v, want the overlay found=%v", dir, got, want)
		}
	}
}
