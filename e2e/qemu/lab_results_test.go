package qemu

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

var update = flag.Bool("update", false, "rewrite the generated blocks of docs/lab.md (each kernel's version and results) from this run")

const (
	// docPath is the document whose generated blocks a run with -update rewrites.
	docPath = "../../docs/lab.md"
	// resultsPath is where every run writes its table.
	resultsPath = "../../bin/lab-results.md"
)

// guestRun is what one kernel's guest showed.
type guestRun struct {
	kernel, release string
	wall            string // lab.sh run: boot, scenarios, power off
	boot            string // seconds from the kernel's start to lab-test
	version         string // mntleak version
	probe           string // kernel-probe.sh
	scenarios       []scenarioRun
	failed          bool
}

// scenarioRun is one scenario's findings in one guest.
type scenarioRun struct {
	name    string
	seconds string
	buffer  string // the daemon's buffer
	entries []*journalEntry
	passed  bool
}

// labResults collects the guests' runs for the table.
type labResults struct {
	mu   sync.Mutex
	runs []guestRun
}

func (r *labResults) add(g guestRun) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.runs = append(r.runs, g)
}

// write puts the table in bin/lab-results.md, and with -update each
// passing kernel's blocks in docs/lab.md.
func (r *labResults) write(t *testing.T) {
	t.Helper()
	var all strings.Builder
	for _, g := range r.runs {
		all.WriteString(g.results())
	}
	if err := os.MkdirAll(filepath.Dir(resultsPath), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(resultsPath, []byte(all.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	if !*update {
		return
	}
	editDoc(t, func(doc string) string {
		for _, g := range r.runs {
			if g.failed {
				t.Logf("docs/lab.md: kernel %s failed, its blocks are left as they were", g.kernel)
				continue
			}
			doc = replaceBlock(t, doc, "version:"+g.kernel, "```\n"+g.version+"\n```\n")
			doc = replaceBlock(t, doc, "probe:"+g.kernel, "```\n"+g.probe+"\n```\n")
			doc = replaceBlock(t, doc, "results:"+g.kernel, g.results())
		}
		return doc
	})
}

// editDoc rewrites docs/lab.md with edit.
func editDoc(t *testing.T, edit func(string) string) {
	t.Helper()
	b, err := os.ReadFile(docPath)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(docPath, []byte(edit(string(b))), 0o644); err != nil {
		t.Fatal(err)
	}
}

// results is the kernel's table: a row a finding of each scenario.
func (g guestRun) results() string {
	var b strings.Builder
	fmt.Fprintf(&b, "Kernel %s (`%s`), run on %s: %s for lab.sh run (payload, boot, scenarios, power-off), %s s from the kernel's start to the lab's unit, under TCG.\n\n",
		g.kernel, g.release, time.Now().UTC().Format("2006-01-02"), g.wall, g.boot)
	b.WriteString("| scenario (s in the guest, buffer) | finding line | cause | holder |\n|---|---|---|---|\n")
	for _, s := range g.scenarios {
		name := fmt.Sprintf("%s (%s s, %s)", s.name, s.seconds, s.buffer)
		if !s.passed {
			name += " FAILED"
		}
		if len(s.entries) == 0 {
			fmt.Fprintf(&b, "| %s | (no finding) | | |\n", name)
		}
		for _, e := range s.entries {
			fmt.Fprintf(&b, "| %s | `%s` | %s | %s in mnt:[%s] |\n", name, strings.ReplaceAll(e.Message, "|", `\|`), e.Cause, e.HolderPID, e.HolderNS)
		}
	}
	return b.String()
}

// replaceBlock replaces what is between <!-- lab:NAME --> and
// <!-- /lab:NAME --> with text.
func replaceBlock(t *testing.T, doc, name, text string) string {
	t.Helper()
	open, end := "<!-- lab:"+name+" -->\n", "<!-- /lab:"+name+" -->"
	i, j := strings.Index(doc, open), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("docs/lab.md has no block %s", name)
	}
	return doc[:i+len(open)] + text + doc[j:]
}
