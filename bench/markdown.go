package bench

import (
	"errors"
	"io/fs"
	"os"
	"strings"
)

// resultsHeader starts the section of docs/BENCHMARKS.md a run rewrites;
// the rest of the document (method, fixes, the soak) is left as it is.
const resultsHeader = "## Results"

// writeResults puts section in place of the Results section of the
// Markdown file at path (up to the next "## " header), creating the file
// when it does not exist.
func writeResults(path, section string) error {
	section = resultsHeader + "\n\n" + strings.TrimSpace(section) + "\n"
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return os.WriteFile(path, []byte("# Benchmarks\n\n"+section), 0o644)
	}
	if err != nil {
		return err
	}
	doc := string(b)
	start := strings.Index(doc, "\n"+resultsHeader+"\n")
	if start < 0 {
		return os.WriteFile(path, []byte(strings.TrimRight(doc, "\n")+"\n\n"+section), 0o644)
	}
	start++
	rest := doc[start+len(resultsHeader):]
	end := len(doc)
	if i := strings.Index(rest, "\n## "); i >= 0 {
		end = start + len(resultsHeader) + i + 1
	}
	return os.WriteFile(path, []byte(doc[:start]+section+"\n"+doc[end:]), 0o644)
}
