package filemaps

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestFileMaps: each package's doc.go file map lists exactly its files.
func TestFileMaps(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	dirs, err := goPackageDirs(root)
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 30 {
		t.Fatalf("found %d packages only: wrong root %s?", len(dirs), root)
	}
	for dir, files := range dirs {
		rel, _ := filepath.Rel(root, dir)
		doc, err := packageComment(filepath.Join(dir, "doc.go"))
		if err != nil {
			t.Errorf("%s: %v", rel, err)
			continue
		}
		listed, ok := fileMap(doc)
		if !ok {
			t.Errorf("%s/doc.go: no file map (a \"Files:\" part naming the package's .go files)", rel)
			continue
		}
		for _, f := range mustList(files) {
			if !mapNames(listed, f) {
				t.Errorf("%s/doc.go: the file map does not list %s", rel, f)
			}
		}
		for _, name := range listed {
			if !slices.ContainsFunc(files, func(f string) bool { return matches(name, f) }) {
				t.Errorf("%s/doc.go: the file map lists %s, which the package does not have", rel, name)
			}
		}
	}
}

// mustList returns the files a package's map must name: its source files
// but doc.go, or, in a package of tests only, its test files. (A map may
// name test files in a package with source; each name must be a file.)
func mustList(files []string) []string {
	var source, tests []string
	for _, f := range files {
		switch {
		case f == "doc.go":
		case strings.HasSuffix(f, "_test.go"):
			tests = append(tests, f)
		default:
			source = append(source, f)
		}
	}
	if len(source) == 0 {
		return tests
	}
	return source
}

// goPackageDirs returns every directory under root holding .go files, with
// their base names; the go tool's ignored directories (testdata, names
// starting with _ or .) and bin/ are skipped.
func goPackageDirs(root string) (map[string][]string, error) {
	dirs := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != root && (name == "testdata" || name == "bin" || strings.HasPrefix(name, "_") || strings.HasPrefix(name, ".")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") {
			dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], name)
		}
		return nil
	})
	return dirs, err
}

// packageComment returns the text of path's package comment.
func packageComment(path string) (string, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f, err := parser.ParseFile(token.NewFileSet(), path, src, parser.ParseComments|parser.PackageClauseOnly)
	if err != nil {
		return "", err
	}
	if f.Doc == nil {
		return "", os.ErrNotExist
	}
	return f.Doc.Text(), nil
}

// goFileName is a bare .go file name (a "*" allowed), not preceded by a
// path separator or a word character.
var goFileName = regexp.MustCompile(`(^|[^/\w.*-])([\w*-]+\.go)\b`)

// mapStart is where a file map starts: "Files:" at the start of a line.
var mapStart = regexp.MustCompile(`(?m)^Files:`)

// fileMap returns the .go names of doc's file map, from its "Files:" on,
// and whether it has one.
func fileMap(doc string) ([]string, bool) {
	loc := mapStart.FindStringIndex(doc)
	if loc == nil {
		return nil, false
	}
	i := loc[0]
	var names []string
	for _, m := range goFileName.FindAllStringSubmatch(doc[i:], -1) {
		if !slices.Contains(names, m[2]) {
			names = append(names, m[2])
		}
	}
	return names, true
}

// mapNames reports whether one of listed names file.
func mapNames(listed []string, file string) bool {
	return slices.ContainsFunc(listed, func(name string) bool { return matches(name, file) })
}

// matches reports whether name, which may hold a "*", names file.
func matches(name, file string) bool {
	ok, err := filepath.Match(name, file)
	return err == nil && ok
}

// TestFileMapReading: what the test takes for the map's names.
func TestFileMapReading(t *testing.T) {
	doc := "Package x.\n\nSee cmd/mntleak/main.go.\n\nFiles: a.go (A), b_test.go and\n*_bpfel.go; not cmd/x/c.go; d.go.\n"
	got, ok := fileMap(doc)
	want := []string{"a.go", "b_test.go", "*_bpfel.go", "d.go"}
	if !ok || !slices.Equal(got, want) {
		t.Errorf("fileMap = %q, %v; want %q", got, ok, want)
	}
	if _, ok := fileMap("Package x has no map; its \"Files:\" are elsewhere.\n"); ok {
		t.Error("a comment without a line starting Files: has a map")
	}
	if got := mustList([]string{"doc.go", "a.go", "a_test.go"}); !slices.Equal(got, []string{"a.go"}) {
		t.Errorf("mustList of a package with source = %q", got)
	}
	if got := mustList([]string{"doc.go", "a_test.go"}); !slices.Equal(got, []string{"a_test.go"}) {
		t.Errorf("mustList of a package of tests = %q", got)
	}
	if !matches("*_bpfel.go", "tracer_x86_bpfel.go") || matches("a.go", "ab.go") {
		t.Error("matches")
	}
}
