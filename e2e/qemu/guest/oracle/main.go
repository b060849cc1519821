package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/mntleak/mntleak/e2e/oraclecheck"
	"github.com/mntleak/mntleak/finding"
)

// entry is what it reads of a journal entry: mntleak's finding fields.
type entry struct {
	Finding string `json:"MNTLEAK_FINDING"`
	Detail  string `json:"MNTLEAK_DETAIL"`
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "oracle:", err)
		os.Exit(1)
	}
}

func run() error { return follow(os.Stdin, os.Stdout) }

// follow judges every finding of the journal entries in, one verdict a
// line on out.
func follow(in io.Reader, w io.Writer) error {
	out := json.NewEncoder(w)
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e entry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return fmt.Errorf("journal entry %.80q: %w", sc.Text(), err)
		}
		if e.Finding == "" {
			continue
		}
		var f finding.Finding
		if err := json.Unmarshal([]byte(e.Detail), &f); err != nil {
			return fmt.Errorf("finding detail %.80q: %w", e.Detail, err)
		}
		v, ok := oraclecheck.Judge(&f)
		if !ok {
			v = oraclecheck.Verdict{Line: f.Line(), Unchecked: "not checkable (no device)"}
		}
		if err := out.Encode(v); err != nil {
			return fmt.Errorf("write verdict: %w", err)
		}
	}
	return sc.Err()
}
