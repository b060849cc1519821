package correlate

import (
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// hasFlags reports whether ev's flags (mount's MS_*, open_tree's) have
// every bit of want.
func hasFlags(ev *event.Event, want uint64) bool { return ev.Flags&want == want }

// failedWith reports whether ev's call failed with errno.
func failedWith(ev *event.Event, errno unix.Errno) bool { return ev.Ret == -int64(errno) }
