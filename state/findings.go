package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// FindingsName is the file in the state dir where the daemon keeps the
// findings it logged, one JSON line each ({"id": ID, "finding": {...}}),
// so that mntleak release --finding ID finds one by the id its log line
// and journal entry carry. FindingsName+".1" is the one before.
const FindingsName = "findings.jsonl"

const maxFindingsBytes = 8 << 20

// AppendFinding keeps one finding (its JSON) under id.
func AppendFinding(dir, id string, finding []byte) error {
	b, err := json.Marshal(struct {
		ID      string          `json:"id"`
		Finding json.RawMessage `json:"finding"`
	}{id, finding})
	if err != nil {
		return fmt.Errorf("finding %s: %w", id, err)
	}
	return appendLine(dir, FindingsName, maxFindingsBytes, b)
}

// ErrNoFinding: no finding with that id is kept.
var ErrNoFinding = errors.New("no finding with that id in the state dir")

// LookupFinding returns the JSON of the finding kept under id, the newest
// when there are several.
func LookupFinding(dir, id string) ([]byte, error) {
	var found []byte
	err := FindingsWith(dir, `"id":"`+id+`"`, func(kept string, finding []byte) {
		if kept == id {
			found = finding
		}
	})
	if err != nil {
		return nil, err
	}
	if found == nil {
		return nil, ErrNoFinding
	}
	return found, nil
}

// FindingsWith calls fn with the id and JSON (a copy) of every finding
// kept whose line contains substr, oldest first.
func FindingsWith(dir, substr string, fn func(id string, finding []byte)) error {
	want := []byte(substr)
	return scanLines(dir, FindingsName, func(line []byte) {
		if !bytes.Contains(line, want) {
			return
		}
		var rec struct {
			ID      string          `json:"id"`
			Finding json.RawMessage `json:"finding"`
		}
		if json.Unmarshal(line, &rec) == nil {
			fn(rec.ID, append([]byte(nil), rec.Finding...))
		}
	})
}
