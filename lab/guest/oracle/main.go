// Command oracle runs in the lab's guest (Debian's 6.1 kernel, real
// systemd): it reads mntleak's journal entries on stdin (journalctl -o
// json -f), and for each finding compares it with the oracle
// (e2e/oracle, through e2e/oraclecheck.Judge) at once, writing one
// oraclecheck.Verdict a line on stdout; the host test reads them back and
// fails on a disagreement. The guest has no namespace walk
// (NS_MNT_GET_NEXT, listmount and statmount came in 6.8–6.12): the oracle
// reads the namespaces of processes, open nsfs fds and nsfs binds, each
// table through a member's mountinfo. A test harness, never shipped.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/e2e/oraclecheck"
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
		var f correlate.Finding
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
