package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/correlate"
)

// TestReplayRecordedScenario: replay of a stream recorded from a real run
// prints its findings, as JSON or one line each.
func TestReplayRecordedScenario(t *testing.T) {
	stream := filepath.Join("..", "..", "testdata", "scenarios", "seed002-node-exporter", "stream.jsonl")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"replay", "--format", "json", stream}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d findings, want 2:\n%s", len(lines), stdout.String())
	}
	for _, l := range lines {
		var f correlate.Finding
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatal(err)
		}
		if f.Cause != correlate.CauseRprivateBind {
			t.Errorf("cause %s, want rprivate-bind", f.Cause)
		}
	}
	stdout.Reset()
	if code := run([]string{"replay", "--format", "text", stream}, &stdout, &stderr); code != exitOK ||
		!strings.HasPrefix(stdout.String(), "LEAK ") || !strings.Contains(stdout.String(), "\nEBUSY openat /dev/loop") {
		t.Errorf("text replay: exit %d\n%s", code, stdout.String())
	}
}

// TestReplayBadInput: every kind of bad input is one line naming the file
// and line, exit status 2.
func TestReplayBadInput(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"proc":{"op":"processes","processes":[]}}` + "\n" + `{"proc":{"op":"hostns","mntns":1}}` + "\n"
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"no file", []string{"replay"}, "want exactly one FILE"},
		{"missing file", []string{"replay", filepath.Join(dir, "nope")}, "no such file"},
		{"not JSON", []string{"replay", write("a", good+"garbage\n")}, "a:3: not a JSON object"},
		{"bad JSON", []string{"replay", write("b", good+"{\"kind\":\n")}, "b:3: invalid JSON"},
		{"unknown kind", []string{"replay", write("c", good+`{"kind":"teleport"}`+"\n")}, `c:3: invalid event: unknown event kind "teleport"`},
		{"unknown proc op", []string{"replay", write("d", `{"proc":{"op":"guess"}}`+"\n")}, `d:1: proc record with unknown op "guess"`},
		{"neither", []string{"replay", write("e", `{"hello":1}`+"\n")}, `e:1: neither an event`},
		{"bad device", []string{"replay", write("f", good+`{"kind":"failure","rdev":"x"}`+"\n")}, `f:3: invalid event`},
		{"no snapshot", []string{"replay", write("g", "")}, "startup snapshot"},
		{"bad format", []string{"replay", "--format", "yaml", "x"}, `unknown format "yaml"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := run(tt.args, &stdout, &stderr); code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			msg := strings.TrimSpace(stderr.String())
			if !strings.Contains(msg, tt.wantErr) || strings.Count(msg, "\n") != 0 {
				t.Errorf("stderr %q, want one line with %q", msg, tt.wantErr)
			}
		})
	}
}
