package correlate

import (
	"strings"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// verdict is the classifier's answer for one holder.
type verdict struct {
	cause    finding.Cause
	summary  string
	evidence []finding.Evidence
	fix      string
	inferred bool
	missing  []string
	// made is the mount event of a copy made in another namespace (a
	// shared-propagation verdict): the finding leads with the namespace
	// that made it, and names the process that made it while it runs there.
	made *event.Event
}

// analysis is the context of one finding being built.
type analysis struct {
	trigger *event.Event // the failing call, or the umount that left a copy
	leak    bool         // a leak forming (the umount succeeded)
	caller  uint32
	id      identity
	pins    map[uint32][]finding.PinRef
	// own is the caller's own mount of the object, for a question (why,
	// release) asked where the object is still mounted.
	own *procfs.Mount
}

// question: the trigger is a question (why, release), not a call that
// failed.
func (a *analysis) question() bool { return a.trigger.SyscallNr < 0 }

// label names a namespace for people: "the host" for pid 1's.
func (c *Correlator) label(ns uint32) string {
	if ns == c.hostNS && ns != 0 {
		return "the host"
	}
	return finding.NSName(ns)
}

// stayed is the tail of a leak summary: the unmount that left the copy.
func (c *Correlator) stayed(a *analysis) string {
	if !a.leak {
		return ""
	}
	return "; " + c.label(a.caller) + " unmounted " + a.trigger.Target + " at " + finding.Clock(a.trigger.Time) + " and the copy stayed"
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}

func parentDir(p string) string {
	if i := strings.LastIndexByte(p, '/'); i > 0 {
		return p[:i]
	}
	return "/"
}

// match is one place an object was found.
type match struct {
	ns       *Namespace
	table    *Table
	mount    *procfs.Mount // nil for a pin-only holder
	where    string
	self     bool
	exited   time.Time
	detached bool    // seen before the unmount, detached by the kernel since
	kept     *keeper // no process runs in the namespace: what keeps it
	// bound: processes run in the namespace, and a bind of its nsfs file
	// keeps it too (a runtime confined in a namespace of its own, as
	// snapd keeps a snap's at /run/snapd/ns/SNAP.mnt): it outlives them.
	bound *keeper
}

// view is where a path shows in another table, and the bind mount it shows
// through (0: the literal path).
type view struct {
	path string
	bind int
}
