package correlate

import (
	"testing"

	"github.com/mntleak/mntleak/finding"
)

// parentDir is the directory a path is in: the root for a top-level path
// (the mounts below / are what a PrivateTmp fix names for a copy at
// /data) and for a path with no slash.
func TestParentDirOfATopLevelPathIsTheRoot(t *testing.T) {
	for p, want := range map[string]string{"/srv/vol": "/srv", "/srv/vol/sub": "/srv/vol", "/data": "/", "data": "/"} {
		if got := parentDir(p); got != want {
			t.Errorf("parentDir(%q) = %q, want %q", p, got, want)
		}
	}
}

// A rule table whose last row does not match (a broken table) still
// answers: the holding is of an unknown cause, the namespace holds a copy.
func TestClassifyWithNoRuleMatchingAnswersUnknown(t *testing.T) {
	c := New(nil, Options{}, func(*finding.Finding) {})
	c.rules = []rule{{finding.CauseUnshare, func(*Correlator, *analysis, match) (verdict, bool) { return verdict{}, false }}}
	v := c.classify(&analysis{}, match{ns: &Namespace{Ino: 9}})
	if v.cause != finding.CauseUnknown || v.summary != "mnt:[9] holds a copy" {
		t.Errorf("got %s: %q, want %s: %q", v.cause, v.summary, finding.CauseUnknown, "mnt:[9] holds a copy")
	}
}
