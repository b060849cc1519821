package correlate

import (
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// TestStaleBindRuleCalls: the stale-bind rule explains a mount or a
// move_mount that failed with ENOENT from a bind whose file was deleted,
// and nothing else: another call that failed with ENOENT on the same
// stale bind, and a move_mount that failed otherwise, are left to the
// rules below it.
func TestStaleBindRuleCalls(t *testing.T) {
	staleTable := "1 0 254:0 / / rw - ext4 /dev/vda rw\n2 1 254:0 /cm/key//deleted /srv/vol rw - ext4 /dev/vda rw\n"
	moveMount := func(errno unix.Errno) *event.Event {
		ev := failing(event.KindMoveMount, errno, "/srv/vol")
		ev.FromPath, ev.ToPath, ev.Target, ev.Path = "/srv/vol", "/c/dst", "", ""
		return ev
	}
	openat := failing(event.KindFailure, unix.ENOENT, "/srv/vol")
	openat.SyscallNr, openat.Syscall = 257, "openat"
	tests := []struct {
		name    string
		trigger *event.Event
		stale   bool
	}{
		{"mount ENOENT", failing(event.KindMount, unix.ENOENT, "/srv/vol"), true},
		{"move_mount ENOENT", moveMount(unix.ENOENT), true},
		{"move_mount EINVAL", moveMount(unix.EINVAL), false},
		{"openat ENOENT", openat, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v, ok := ruleWorld{self: true, trigger: tt.trigger, caller: staleTable}.run(t, (*Correlator).ruleStaleBind)
			if ok != tt.stale {
				t.Fatalf("stale bind %v (%q), want %v", ok, v.summary, tt.stale)
			}
			if ok && !strings.Contains(v.summary, "is a bind of /cm/key, which has since been deleted") {
				t.Errorf("summary %q does not name the deleted file", v.summary)
			}
		})
	}
}
