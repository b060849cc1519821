package correlate_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
)

// recordedUnreadable is the count a recorded pin search could not read
// (procfs.Record's "unreadable"), as it sits in a stream line.
var recordedUnreadable = regexp.MustCompile(`,"unreadable":[0-9]+`)

// TestUnreadableNoteIsRecorded: the goldens' "missing: the processes that
// pin it: 1 process unreadable" is real: the recording machine's kernel
// refused root one process (its PID 1), and the stream records it on the
// pin searches that met it. Replayed with those counts removed, every
// scenario gives the same findings, byte for byte, less that note; a
// finding carries it exactly when its search met such a process.
func TestUnreadableNoteIsRecorded(t *testing.T) {
	streams, _ := filepath.Glob("../e2e/scenarios/*/stream.jsonl")
	if len(streams) == 0 {
		t.Fatal("no recorded streams")
	}
	noted := 0
	for _, stream := range streams {
		name := filepath.Base(filepath.Dir(stream))
		raw, err := os.ReadFile(stream)
		if err != nil {
			t.Fatal(err)
		}
		got := replayBytes(t, name, raw)
		clean := replayBytes(t, name, recordedUnreadable.ReplaceAll(raw, nil))
		if len(got) != len(clean) {
			t.Errorf("%s: %d findings as recorded, %d without the unreadable counts", name, len(got), len(clean))
			continue
		}
		for i := range got {
			f := *got[i]
			f.Missing = slices.DeleteFunc(slices.Clone(f.Missing), func(m string) bool {
				return strings.HasPrefix(m, "the processes that pin it: ") && strings.HasSuffix(m, " unreadable")
			})
			if len(f.Missing) != len(got[i].Missing) {
				noted++
			}
			if len(f.Missing) == 0 {
				f.Missing = nil
			}
			if a, b := jsonOf(t, &f), jsonOf(t, clean[i]); !bytes.Equal(a, b) {
				t.Errorf("%s finding %d: the unreadable count changed more than its note:\n%s\n%s", name, i, a, b)
			}
		}
	}
	t.Logf("%d findings carry the recorded note", noted)
}

func replayBytes(t *testing.T, name string, stream []byte) []*finding.Finding {
	t.Helper()
	var got []*finding.Finding
	if err := correlate.Replay(bytes.NewReader(stream), name, func(f *finding.Finding) { got = append(got, f) }); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return got
}

func jsonOf(t *testing.T, f *finding.Finding) []byte {
	t.Helper()
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
