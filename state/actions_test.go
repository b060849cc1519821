package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestActions(t *testing.T) {
	dir := t.TempDir()
	if err := AppendAction(filepath.Join(dir, "missing"), map[string]string{"action": "release"}); err == nil {
		t.Error("a record was written into a state dir that does not exist")
	}
	recs := []map[string]string{
		{"action": "release", "result": "planned"},
		{"action": "release", "result": "released"},
		{"action": "release", "result": "released"},
		{"action": "release", "result": "refused"},
	}
	for _, r := range recs {
		if err := AppendAction(dir, r); err != nil {
			t.Fatal(err)
		}
	}
	// Not a record: skipped.
	f, _ := os.OpenFile(filepath.Join(dir, ActionsName), os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("garbage\n{}\n")
	f.Close()
	got, err := CountActions(dir)
	if err != nil {
		t.Fatal(err)
	}
	want := map[[2]string]uint64{{"release", "planned"}: 1, {"release", "released"}: 2, {"release", "refused"}: 1}
	if len(got) != len(want) {
		t.Fatalf("counts %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%v: %d, want %d", k, got[k], v)
		}
	}
	// Rotation keeps one old file, and its records are still counted.
	big := map[string]string{"action": "release", "result": "released", "pad": strings.Repeat("x", maxActionsBytes/2)}
	for range 3 {
		if err := AppendAction(dir, big); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, ActionsName+".1")); err != nil {
		t.Fatalf("no rotation: %v", err)
	}
	got, _ = CountActions(dir)
	if n := got[[2]string{"release", "released"}]; n < 1 || n > 4 {
		t.Errorf("released after rotation: %d", n)
	}
}
