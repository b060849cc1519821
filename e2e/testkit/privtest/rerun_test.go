package privtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRerunIsRecorded: each rerun is one line in the file RerunsEnv
// names, which make test prints as its "reruns:" line, and is logged.
func TestRerunIsRecorded(t *testing.T) {
	file := filepath.Join(t.TempDir(), "reruns")
	t.Setenv(RerunsEnv, file)
	r := Record(t, func(tb testing.TB) {
		Rerun(tb, "correlate", 12)
		Rerun(tb, "variants", 3)
	})
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	want := "correlate/" + t.Name() + ": 12 events lost\nvariants/" + t.Name() + ": 3 events lost\n"
	if string(b) != want {
		t.Errorf("%s holds %q, want %q", file, b, want)
	}
	if r.Failed() || len(r.Reports()) != 2 || !strings.HasPrefix(r.Reports()[0], "rerun: correlate/") {
		t.Errorf("the reruns were not logged as such: %v", r.Reports())
	}
}
