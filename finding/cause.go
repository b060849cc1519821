package finding

import "fmt"

// Cause is why an object is still held. The set is closed: the classifier
// picks exactly one per finding.
type Cause int

// Causes. The zero value is invalid.
const (
	CauseInvalid Cause = iota
	// A daemon started by systemd into a slave namespace (MountFlags=slave)
	// was restarted into a newer one; survivors (containerd-shim under
	// live-restore) keep the old namespace and its mounts.
	CauseMountflagsRestart
	// The holder namespace is a PrivateTmp=yes unit's, taken after the
	// object was mounted.
	CausePrivateTmp
	// The object sits under a recursive bind whose copy is private: a
	// container's hostPath / (mountPropagation None).
	CauseRprivateBind
	// The copy was taken while its parent mount was private.
	CausePrivateParent
	// A mount made in another namespace propagated into the caller's through
	// a shared peer group (Bidirectional / rshared) and now blocks it.
	CauseSharedPropagation
	// A propagated copy in another namespace is busy (a cwd or fd in it).
	CauseBusyCopy
	// No leak: the object is mounted or open in the caller's own namespace.
	CauseInUse
	// mount/move_mount ENOENT: the source is a bind of a file or directory
	// that was deleted (subPath of an updated ConfigMap). Not a leak.
	CauseStaleBind
	// A generic private namespace keeps a copy; its creator is named.
	CauseUnshare
	// Not enough evidence; the finding says what is missing.
	CauseUnknown
	causeMax
)

var causeNames = [...]string{
	CauseInvalid:           "invalid",
	CauseMountflagsRestart: "mountflags-restart",
	CausePrivateTmp:        "private-tmp",
	CauseRprivateBind:      "rprivate-bind",
	CausePrivateParent:     "private-parent",
	CauseSharedPropagation: "shared-propagation",
	CauseBusyCopy:          "busy-copy",
	CauseInUse:             "in-use",
	CauseStaleBind:         "stale-bind",
	CauseUnshare:           "unshare",
	CauseUnknown:           "unknown",
}

func (c Cause) String() string {
	if c >= 0 && c < causeMax {
		return causeNames[c]
	}
	return fmt.Sprintf("cause(%d)", int(c))
}

// IsLeak reports whether the cause means a mount leaked into another
// namespace (as opposed to a plain busy mount or a stale bind).
func (c Cause) IsLeak() bool {
	switch c {
	case CauseInUse, CauseStaleBind, CauseUnknown, CauseInvalid, CauseBusyCopy:
		return false
	}
	return true
}

// MarshalText implements encoding.TextMarshaler.
func (c Cause) MarshalText() ([]byte, error) {
	if c <= CauseInvalid || c >= causeMax {
		return nil, fmt.Errorf("invalid cause %d", int(c))
	}
	return []byte(c.String()), nil
}

// UnmarshalText implements encoding.TextUnmarshaler.
func (c *Cause) UnmarshalText(b []byte) error {
	cause, err := ParseCause(string(b))
	if err != nil {
		return err
	}
	*c = cause
	return nil
}

// ParseCause returns the cause named s.
func ParseCause(s string) (Cause, error) {
	for c := CauseMountflagsRestart; c < causeMax; c++ {
		if causeNames[c] == s {
			return c, nil
		}
	}
	return CauseInvalid, fmt.Errorf("unknown cause %q", s)
}

// Causes lists every valid cause.
func Causes() []Cause {
	out := make([]Cause, 0, causeMax-1)
	for c := CauseMountflagsRestart; c < causeMax; c++ {
		out = append(out, c)
	}
	return out
}
