package correlate

import (
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// madeNothing: a mount(2) with any of these flags changes a mount's
// propagation or options; it makes no mount.
const madeNothing = unix.MS_REMOUNT | unix.MS_SHARED | unix.MS_PRIVATE | unix.MS_SLAVE | unix.MS_UNBINDABLE

// hasFlags reports whether ev's flags (mount's MS_*, open_tree's) have
// every bit of want.
func hasFlags(ev *event.Event, want uint64) bool { return ev.Flags&want == want }

// failedWith reports whether ev's call failed with errno.
func failedWith(ev *event.Event, errno unix.Errno) bool { return ev.Ret == -int64(errno) }
