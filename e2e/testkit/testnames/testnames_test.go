package testnames

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// TestNoPrefixNames: no test, fuzz or benchmark name in a package is a
// prefix of another's there (`-run TestCauses` once also ran
// TestCausesEndToEnd).
func TestNoPrefixNames(t *testing.T) {
	root := filepath.Join("..", "..", "..")
	byDir := map[string][]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			name := declName(decl)
			for _, prefix := range []string{"Test", "Fuzz", "Benchmark"} {
				if strings.HasPrefix(name, prefix) && name != "TestMain" {
					byDir[filepath.Dir(path)] = append(byDir[filepath.Dir(path)], name)
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(byDir) < 10 {
		t.Fatalf("found tests in %d packages only: wrong root %s?", len(byDir), root)
	}
	for dir, names := range byDir {
		sort.Strings(names)
		for i, a := range names {
			for _, b := range names[i+1:] {
				if strings.HasPrefix(b, a) {
					rel, _ := filepath.Rel(root, dir)
					t.Errorf("%s: %s is a prefix of %s: -run %s runs both", rel, a, b, a)
				}
			}
		}
	}
}

// declName is the name of a top-level function (not a method), else "".
func declName(d ast.Decl) string {
	if fd, ok := d.(*ast.FuncDecl); ok && fd.Recv == nil {
		return fd.Name.Name
	}
	return ""
}
