package state

import (
	"errors"
	"testing"
)

func TestFindings(t *testing.T) {
	dir := t.TempDir()
	for _, f := range []struct{ id, json string }{
		{"aaaaaaaaaaaa", `{"finding":"leak","n":1}`},
		{"bbbbbbbbbbbb", `{"finding":"failure","n":2}`},
		{"aaaaaaaaaaaa", `{"finding":"leak","n":3}`}, // the same id again: the newest wins
	} {
		if err := AppendFinding(dir, f.id, []byte(f.json)); err != nil {
			t.Fatal(err)
		}
	}
	for id, want := range map[string]string{"aaaaaaaaaaaa": `{"finding":"leak","n":3}`, "bbbbbbbbbbbb": `{"finding":"failure","n":2}`} {
		got, err := LookupFinding(dir, id)
		if err != nil || string(got) != want {
			t.Errorf("%s: %s %v, want %s", id, got, err, want)
		}
	}
	if _, err := LookupFinding(dir, "cccccccccccc"); !errors.Is(err, ErrNoFinding) {
		t.Errorf("an unknown id: %v", err)
	}
	if _, err := LookupFinding(t.TempDir(), "aaaaaaaaaaaa"); !errors.Is(err, ErrNoFinding) {
		t.Errorf("an empty state dir: %v", err)
	}
}
