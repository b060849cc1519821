package main

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// result is the part of gremlins' output file (its -o) read here.
type result struct {
	Files []struct {
		Name      string     `json:"file_name"`
		Mutations []mutation `json:"mutations"`
	} `json:"files"`
}

type mutation struct {
	Type   string `json:"type"`
	Status string `json:"status"`
	Line   int    `json:"line"`
	Column int    `json:"column"`
}

// The statuses gremlins writes.
const (
	killed     = "KILLED"
	lived      = "LIVED"
	notCovered = "NOT COVERED"
	timedOut   = "TIMED OUT"
	notViable  = "NOT VIABLE"
	// uncompilable counts the killed mutants that are a string + made a
	// -: they do not compile, go test exits 1 on a build failure, and
	// gremlins v0.6.0 takes that for killed (it expects 2).
	uncompilable = "uncompilable"
)

// stringConcats returns the positions (line, column) of the + operators
// of file that join strings: a + whose operands (through other +) include
// a string literal. The file is read from the current directory; none are
// found when it cannot be.
func stringConcats(file string) map[[2]int]bool {
	out := map[[2]int]bool{}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, file, nil, parser.SkipObjectResolution)
	if err != nil {
		return out
	}
	var hasString func(e ast.Expr) bool
	hasString = func(e ast.Expr) bool {
		switch e := e.(type) {
		case *ast.BasicLit:
			return e.Kind == token.STRING
		case *ast.ParenExpr:
			return hasString(e.X)
		case *ast.BinaryExpr:
			return e.Op == token.ADD && (hasString(e.X) || hasString(e.Y))
		}
		return false
	}
	var mark func(e *ast.BinaryExpr)
	mark = func(e *ast.BinaryExpr) {
		p := fset.Position(e.OpPos)
		out[[2]int{p.Line, p.Column}] = true
		for _, side := range []ast.Expr{e.X, e.Y} {
			if b, ok := side.(*ast.BinaryExpr); ok && b.Op == token.ADD {
				mark(b)
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		if b, ok := n.(*ast.BinaryExpr); ok && b.Op == token.ADD && hasString(b) {
			mark(b)
		}
		return true
	})
	return out
}

// tally counts one file's (or the total's) mutants by status.
type tally map[string]int

func (t tally) efficacy() string {
	return percent(t[killed], t[killed]+t[lived])
}

func (t tally) coverage() string {
	return percent(t[killed]+t[lived], t[killed]+t[lived]+t[notCovered])
}

func percent(n, of int) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

// survivor is a mutant that lived or that no test reaches.
type survivor struct {
	file string
	mutation
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: mutation GREMLINS.json...")
		os.Exit(2)
	}
	files := map[string]tally{}
	var survivors []survivor
	for _, name := range os.Args[1:] {
		r, err := read(name)
		if err != nil {
			fmt.Fprintf(os.Stderr, "mutation: %v\n", err)
			os.Exit(1)
		}
		pkg := strings.ReplaceAll(strings.TrimSuffix(filepath.Base(name), filepath.Ext(name)), "_", "/")
		for _, f := range r.Files {
			file := f.Name
			if !strings.Contains(file, "/") {
				file = pkg + "/" + file
			}
			t := files[file]
			if t == nil {
				t = tally{}
				files[file] = t
			}
			concat := stringConcats(file)
			for _, m := range f.Mutations {
				t[m.Status]++
				if m.Status == killed && m.Type == "ARITHMETIC_BASE" && concat[[2]int{m.Line, m.Column}] {
					t[uncompilable]++
				}
				if m.Status == lived || m.Status == notCovered {
					survivors = append(survivors, survivor{file: file, mutation: m})
				}
			}
		}
	}
	write(os.Stdout, files, survivors)
}

// read decodes one gremlins output file, or its log.
func read(name string) (*result, error) {
	data, err := os.ReadFile(name)
	if err != nil {
		return nil, err
	}
	if trimmed := strings.TrimSpace(string(data)); !strings.HasPrefix(trimmed, "{") {
		return readLog(trimmed), nil
	}
	var r result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("decode %s: %w", name, err)
	}
	return &r, nil
}

// logLine is one mutant of gremlins' log: "  LIVED CONDITIONALS_NEGATION at leak.go:51:42".
var logLine = regexp.MustCompile(`^\s*(KILLED|LIVED|NOT COVERED|TIMED OUT|NOT VIABLE) ([A-Z_]+) at (\S+):(\d+):(\d+)\s*$`)

// readLog collects the mutants of a gremlins log, by file.
func readLog(text string) *result {
	byFile := map[string][]mutation{}
	var order []string
	for _, line := range strings.Split(text, "\n") {
		m := logLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		l, _ := strconv.Atoi(m[4])
		c, _ := strconv.Atoi(m[5])
		if _, ok := byFile[m[3]]; !ok {
			order = append(order, m[3])
		}
		byFile[m[3]] = append(byFile[m[3]], mutation{Type: m[2], Status: m[1], Line: l, Column: c})
	}
	r := &result{}
	for _, f := range order {
		r.Files = append(r.Files, struct {
			Name      string     `json:"file_name"`
			Mutations []mutation `json:"mutations"`
		}{f, byFile[f]})
	}
	return r
}

// write prints the table, by package then file, and the survivors.
func write(w io.Writer, files map[string]tally, survivors []survivor) {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool {
		if di, dj := path.Dir(names[i]), path.Dir(names[j]); di != dj {
			return di < dj
		}
		return names[i] < names[j]
	})
	fmt.Fprintln(w, "| file | killed | lived | not covered | timed out | not viable | efficacy | coverage | killed that do not compile | efficacy without them |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	total := tally{}
	for _, name := range names {
		t := files[name]
		row(w, name, t)
		for status, n := range t {
			total[status] += n
		}
	}
	row(w, "**total**", total)
	if len(survivors) == 0 {
		return
	}
	sort.Slice(survivors, func(i, j int) bool {
		a, b := survivors[i], survivors[j]
		if a.file != b.file {
			return a.file < b.file
		}
		if a.Line != b.Line {
			return a.Line < b.Line
		}
		return a.Column < b.Column
	})
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Mutants that lived or that no test reaches:")
	fmt.Fprintln(w)
	for _, s := range survivors {
		fmt.Fprintf(w, "- %s:%d:%d %s %s\n", s.file, s.Line, s.Column, s.Type, s.Status)
	}
}

func row(w io.Writer, name string, t tally) {
	fmt.Fprintf(w, "| %s | %d | %d | %d | %d | %d | %s | %s | %d | %s |\n", name,
		t[killed], t[lived], t[notCovered], t[timedOut], t[notViable], t.efficacy(), t.coverage(),
		t[uncompilable], percent(t[killed]-t[uncompilable], t[killed]-t[uncompilable]+t[lived]))
}
