package correlate_test

import (
	"fmt"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// TestSecondUnmountIsHarmlessOnlyAfterTheCallersOwnUnmount: umount2 of
// /srv/vol fails with EINVAL ("not a mount point here") on the node while
// mnt:[80] keeps a copy of it. It is a runtime's harmless second unmount
// when the caller's namespace last unmounted that very path (at the same
// instant too): no failure. When it mounted or moved a mount there again
// since, or unmounted only another path, the failure is explained by the
// copy in mnt:[80]. With no copy elsewhere, the caller's own table (read
// before, still showing the mount EINVAL says is gone) explains nothing.
func TestSecondUnmountIsHarmlessOnlyAfterTheCallersOwnUnmount(t *testing.T) {
	unmount := func(target string) *event.Event { return umountEv(40, "umount", hostNS, target, 0) }
	for _, tc := range []struct {
		name   string
		before func(w *world)
		want   string // the findings' kinds and causes, in order
	}{
		{"unmounted there before", func(w *world) { w.send(unmount("/srv/vol")) }, "leak/unshare"},
		{"unmounted there at the same instant", func(w *world) { w.send(unmount("/srv/vol")) }, "leak/unshare"},
		{"mounted there again since", func(w *world) {
			w.send(unmount("/srv/vol"), mountEv(41, "mount", hostNS, "/dev/loop0", "/srv/vol", "ext4", 0, 0))
		}, "leak/unshare failure/unshare"},
		{"a mount moved there since", func(w *world) {
			mm := base(event.KindMoveMount, 41, "mount", hostNS, 429, 0)
			mm.FromPath, mm.ToPath = "/srv/staging", "/srv/vol"
			w.send(unmount("/srv/vol"), mm)
		}, "leak/unshare failure/unshare"},
		{"another path unmounted", func(w *world) { w.send(unmount("/tmp")) }, "failure/unshare"},
		// The caller's own table, read before, still shows the mount:
		// EINVAL says it is gone there, and no other namespace has it.
		{"no copy elsewhere", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var w *world
			if tc.before == nil {
				w = newWorld(t, []procfs.Process{proc(1, "systemd", hostNS, "")}, map[uint32]string{hostNS: hostTable})
			} else {
				w = heldCopyWorld(t)
				tc.before(w)
			}
			fail := umountEv(40, "umount", hostNS, "/srv/vol", -int64(unix.EINVAL))
			if tc.name == "unmounted there at the same instant" {
				fail.Time, fail.MonoNS = w.now, uint64(w.now.UnixNano()) // the unmount's
				w.c.Handle(fail)
			} else {
				w.send(fail)
			}
			var got []string
			for _, f := range w.findings {
				got = append(got, fmt.Sprintf("%s/%s", f.Kind, f.Cause))
			}
			if strings.Join(got, " ") != tc.want {
				for _, f := range w.findings {
					t.Log(f.Line())
				}
				t.Errorf("findings %q, want %q", strings.Join(got, " "), tc.want)
			}
		})
	}
}
