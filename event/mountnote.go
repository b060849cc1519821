package event

import (
	"time"

	"github.com/moby/sys/mountinfo"
)

// MountNote is the kernel's word that a mount was attached to or detached
// from a mount namespace the daemon watches (fanotify's mount-namespace
// marks, Linux 6.15+): a copy a host's rmdir or unlink detached, a bind
// made in the namespace, one mount of a namespace torn down. No tracer
// event tells the first. It is no Event: the daemon reads it beside the
// tracer's events, and records it as a line of its own (package stream).
type MountNote struct {
	Time   time.Time `json:"time"`   // when the daemon read it (wall clock)
	NS     uint32    `json:"mntns"`  // the namespace's inode
	Detach bool      `json:"detach"` // false: attached
	PID    uint32    `json:"pid"`    // the process that acted (a detach by rmdir: not one of NS)
	// Mount is the mount as mountinfo shows it (the ids are mountinfo's):
	// for an attach as statmount described it then, for a detach as it
	// was last described (the kernel has nothing to say of it any more).
	Mount *mountinfo.Info `json:"mount,omitempty"`
	// Watch, set on a note with no mount, says the daemon began (WatchOn)
	// or stopped (WatchOff: the namespace died, its group failed) reading
	// NS's notes: from the first table read after WatchOn until WatchOff,
	// the notes keep NS's table true (correlate.Correlator.Note).
	Watch string `json:"watch,omitempty"`
}

// The values of MountNote.Watch.
const (
	WatchOn  = "on"
	WatchOff = "off"
)
