package bench

import (
	"os"
	"path/filepath"
	"testing"
)

// TestWriteResults: a run replaces only the Results section.
func TestWriteResults(t *testing.T) {
	path := filepath.Join(t.TempDir(), "B.md")
	if err := writeResults(path, "first"); err != nil {
		t.Fatal(err)
	}
	doc := "# Benchmarks\n\nintro\n\n## Results\n\nold table\n\n## Fixes\n\nkept\n\n## Soak\n\nfilled by make soak.\n"
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := writeResults(path, "new table"); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(path)
	want := "# Benchmarks\n\nintro\n\n## Results\n\nnew table\n\n## Fixes\n\nkept\n\n## Soak\n\nfilled by make soak.\n"
	if string(b) != want {
		t.Errorf("got:\n%s\nwant:\n%s", b, want)
	}
}
