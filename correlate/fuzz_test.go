package correlate

import (
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/event"
)

// FuzzMountinfo: whatever a mountinfo line says (octal escapes, //deleted,
// propagation tags, overlay options), the parsers and the holder search
// built on it do not panic.
func FuzzMountinfo(f *testing.F) {
	f.Add(node, "/run/netns/cni-x")
	f.Add("1 0 254:0 /a\\040b//deleted /x\\011y rw shared:1 master:2 unbindable - ext4 /dev/vda rw\n", "/x\ty")
	f.Add("2 1 0:77 / /m rw - overlay overlay rw,lowerdir=/l1:/l2,upperdir=/u,workdir=/w\n", "/u")
	f.Add("3 3 0:4 net:[1] / rw - nsfs nsfs rw\n", "/")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, text, path string) {
		mounts, err := mountinfo.GetMountsFromReader(strings.NewReader(text), nil)
		if err != nil {
			return
		}
		tb := NewTable(1, mounts, time.Time{}, 0)
		for _, m := range mounts {
			_ = Propagation(m)
			_ = PrivateTmpUnit(m.Root)
			_ = ContainerID(m.Mountpoint)
			_ = overlayUses(m.VFSOptions, path)
			_ = tb.Parent(m)
		}
		_ = tb.Root()
		_ = tb.Containing(path)
		_ = RootPropagation(tb)
		_ = translate(path, tb, tb)
		for _, id := range []identity{{path: path, layers: true}, {dev: event.MakeDev(0, 4), root: "net:[1]", path: path}, {dev: event.MakeDev(7, 0), block: true}} {
			_ = outermost(tb, findIn(tb, id, tb))
		}
	})
}
