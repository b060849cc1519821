package release_test

import (
	"strings"
	"testing"

	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/release"
)

// TestHolderBorn: a finding's holder that names its namespace's birth id
// is refused when the live namespace under that inode was born with
// another (the inode was reused), naming both ids; one that names none
// (predates tracing) is left to the other checks.
func TestHolderBorn(t *testing.T) {
	for _, tc := range []struct {
		name   string
		holder finding.Holder
		live   uint64
		want   string // "" for not refused
	}{
		{"the same namespace (control)", finding.Holder{MntNS: 4026532190, MntNSID: 4378}, 4378, ""},
		{"no birth id in the finding (control)", finding.Holder{MntNS: 4026532190}, 4379, ""},
		{"the inode reused by a new namespace", finding.Holder{MntNS: 4026532190, MntNSID: 4378}, 4379,
			"mnt:[4026532190] was born with id 4379 now (read through /proc/7/ns/mnt), the finding's holder was born with id 4378: the inode was reused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := release.HolderBorn(tc.holder, tc.live, "/proc/7/ns/mnt")
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (err == nil || !release.IsNotLeak(err) || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want a refusal %q", err, tc.want)
			}
		})
	}
}
