package privtest

import (
	"fmt"
	"os"
	"strings"
	"testing"
)

// RerunsEnv names the file every rerun of a test is appended to, one line
// each ("pkg/TestName: reason"); make test sets it and prints the file as
// one line after go test ("reruns: N (...)"), so a rerun is never silent.
const RerunsEnv = "MNTLEAK_RERUNS"

// MaxReruns is how many times a test may run a privileged scenario again,
// and only when the tracer reported lost events for that run (a verdict
// built on a stream with holes): a wrong verdict is never run again.
const MaxReruns = 1

// Rerun records that t runs its scenario again because lost events were
// reported (lost: how many): it is logged, and appended to the file
// RerunsEnv names. It fails the test if it cannot say so.
func Rerun(t testing.TB, pkg string, lost uint64) {
	t.Helper()
	line := fmt.Sprintf("%s/%s: %d events lost", pkg, t.Name(), lost)
	t.Logf("rerun: %s", line)
	file := os.Getenv(RerunsEnv)
	if file == "" {
		return
	}
	f, err := os.OpenFile(file, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatalf("record the rerun: %v", err)
	}
	defer f.Close()
	if _, err := f.WriteString(strings.ReplaceAll(line, "\n", " ") + "\n"); err != nil {
		t.Fatalf("record the rerun in %s: %v", file, err)
	}
}
