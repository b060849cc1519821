package main

import (
	"strings"
	"testing"

	"github.com/mntleak/mntleak/nodeview"
)

// FuzzParseTarget: `mntleak why` arguments give a target or one line of
// error, never a panic.
func FuzzParseTarget(f *testing.F) {
	for _, s := range []string{"/dev/null", "7:3", "99999:1", "garbage", "", "/", "/no/such", "../x", "7:", ":3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := parseTarget(s, nodeview.AsGiven())
		if err != nil && strings.Contains(err.Error(), "\n") && !strings.Contains(s, "\n") {
			t.Fatalf("multi-line error for %q: %v", s, err)
		}
	})
}
