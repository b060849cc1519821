package correlate_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/finding"
)

// TestEveryGoldenFindingIsFit: no recorded finding carries cause
// "invalid" or an empty fix (Finding.Check), in its JSON or its line.
func TestEveryGoldenFindingIsFit(t *testing.T) {
	goldens, err := filepath.Glob(filepath.Join("..", "e2e", "scenarios", "*", "findings.golden"))
	if err != nil || len(goldens) == 0 {
		t.Fatalf("no goldens: %v", err)
	}
	n := 0
	for _, g := range goldens {
		b, err := os.ReadFile(g)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(b), "\n") {
			switch {
			case strings.HasPrefix(line, "{"):
				var f finding.Finding
				if err := json.Unmarshal([]byte(line), &f); err != nil {
					t.Errorf("%s:%d: %v", g, i+1, err)
				} else if err := f.Check(); err != nil {
					t.Errorf("%s:%d: %v", g, i+1, err)
				}
				n++
			case line != "" && (strings.Contains(line, "[cause: invalid]") || strings.HasSuffix(line, "Fix: ") || !strings.Contains(line, ". Fix: ")):
				t.Errorf("%s:%d: a line without a cause or a fix: %s", g, i+1, line)
			}
		}
	}
	t.Logf("%d findings in %d goldens", n, len(goldens))
}
