package correlate_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// doc.go's file map names exactly the package's files: a file added,
// split or removed (a rule_<slug>.go) shows there.
func TestFileMapIsCurrent(t *testing.T) {
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	// A file of this package: a name of its own, not a path into another.
	for _, m := range regexp.MustCompile(`(^|[^/\w])([a-z_]+\.go)\b`).FindAllStringSubmatch(string(doc), -1) {
		named[m[2]] = true
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files = slices.DeleteFunc(files, func(f string) bool { return strings.HasSuffix(f, "_test.go") || f == "doc.go" })
	for _, f := range files {
		if !named[f] {
			t.Errorf("doc.go's file map does not name %s", f)
		}
		delete(named, f)
	}
	for f := range named {
		t.Errorf("doc.go's file map names %s, which is not a file of the package", f)
	}
}
