package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
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
	want := []byte(`"id":"` + id + `"`)
	for _, name := range []string{FindingsName + ".1", FindingsName} {
		f, err := os.Open(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if !bytes.Contains(sc.Bytes(), want) {
				continue
			}
			var rec struct {
				ID      string          `json:"id"`
				Finding json.RawMessage `json:"finding"`
			}
			if json.Unmarshal(sc.Bytes(), &rec) == nil && rec.ID == id {
				found = append([]byte(nil), rec.Finding...)
			}
		}
		err = sc.Err()
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, err)
		}
	}
	if found == nil {
		return nil, ErrNoFinding
	}
	return found, nil
}
