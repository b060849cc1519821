package tracer

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestHooksDocTable: every call docs/hooks.md lists as failing with EBUSY
// because of a mount is reported on both paths by the program its row
// names: its handler when it has one (the dispatcher's slot, or fexit on
// its syscall function), else the catch-all; and the trampoline path hooks
// the catch-all on exactly the calls whose rows name it (ebusySyscalls).
func TestHooksDocTable(t *testing.T) {
	doc, err := os.ReadFile("../docs/hooks.md")
	if err != nil {
		t.Fatal(err)
	}
	text := string(doc)
	start, end := strings.Index(text, "<!-- hooks:ebusy -->"), strings.Index(text, "<!-- /hooks:ebusy -->")
	if start < 0 || end < start {
		t.Fatal("docs/hooks.md: no hooks:ebusy table")
	}
	handlerOf := map[string]handler{}
	for _, h := range (&objects{}).handlers() {
		if h.syscall != "" {
			handlerOf[h.syscall] = h
		}
	}
	failure := map[string]bool{}
	for _, n := range ebusySyscalls {
		failure[n] = true
	}
	caughtRows := map[string]bool{}
	row := regexp.MustCompile("^\\| `(\\w+)` \\| [^|]+ \\| `sys_exit` → `(\\w+)` \\| fexit `sys_(\\w+)` → `(\\w+)` \\|$")
	rows := 0
	for _, line := range strings.Split(text[start:end], "\n") {
		if !strings.HasPrefix(line, "| `") {
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			t.Errorf("docs/hooks.md: row %q is not | `call` | why | `sys_exit` → `prog` | fexit `sys_fn` → `prog` |", line)
			continue
		}
		rows++
		call, tpProg, fn, fxProg := m[1], m[2], m[3], m[4]
		kernelName := call
		if call == "umount2" {
			kernelName = "umount"
		}
		want := failureProgFailureExit
		if h, ok := handlerOf[kernelName]; ok {
			want = h.program
		} else if !failure[kernelName] {
			t.Errorf("%s: no handler, and the trampoline path's catch-all does not hook it", call)
		} else {
			caughtRows[kernelName] = true
		}
		if tpProg != want || fxProg != want || fn != kernelName {
			t.Errorf("%s: the row says sys_exit → %s, fexit sys_%s → %s; want %s on both, on sys_%s", call, tpProg, fn, fxProg, want, kernelName)
		}
	}
	for _, n := range ebusySyscalls {
		if !caughtRows[n] {
			t.Errorf("the trampoline path hooks the catch-all on sys_%s, which docs/hooks.md's table does not list as failing with EBUSY because of a mount", n)
		}
	}
	if rows < 20 {
		t.Errorf("docs/hooks.md: %d rows, want every EBUSY call", rows)
	}
}
