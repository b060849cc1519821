package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/finding"
)

// TestReplayRecordedScenario: replay of a stream recorded from a real run
// prints its findings, as JSON or one line each.
func TestReplayRecordedScenario(t *testing.T) {
	stream := filepath.Join("..", "..", "e2e", "scenarios", "seed002-node-exporter", "stream.jsonl")
	var stdout, stderr bytes.Buffer
	if code := run([]string{"replay", "--format", "json", stream}, &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d findings, want 2:\n%s", len(lines), stdout.String())
	}
	for _, l := range lines {
		var f finding.Finding
		if err := json.Unmarshal([]byte(l), &f); err != nil {
			t.Fatal(err)
		}
		if f.Cause != finding.CauseRprivateBind {
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
		{"empty", []string{"replay", write("g", "")}, "g: the recording is empty"},
		{"blank lines only", []string{"replay", write("h", "\n\n")}, "h: the recording is empty"},
		{"no snapshot", []string{"replay", write("i", `{"kind":"exit","pid":1}`+"\n")}, "startup snapshot"},
		{"unknown flag", []string{"replay", "--bogus"}, "flag provided but not defined: -bogus"},
		{"truncated line, then more", []string{"replay", write("j", good+"{\"kind\":\"ex\n"+`{"kind":"exit","pid":1}`+"\n")}, "j:3: invalid JSON"},
		{"bad format", []string{"replay", "--format", "yaml", "x"}, `invalid --format "yaml": want human, text or json`},
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

// TestReplayTruncatedAndStdin: a recording cut short in its last line is
// replayed up to it (the findings before the cut, a one-line warning with
// the line number, exit 0); `replay -` reads standard input; -h prints the
// usage once.
func TestReplayTruncatedAndStdin(t *testing.T) {
	whole, err := os.ReadFile(filepath.Join("..", "..", "e2e", "scenarios", "seed002-node-exporter", "stream.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var full bytes.Buffer
	if code := runWith([]string{"replay", "--format", "text", "-"}, bytes.NewReader(whole), &full, &bytes.Buffer{}); code != exitOK {
		t.Fatalf("replay - of the whole recording: exit %d", code)
	}
	if n := strings.Count(full.String(), "\n"); n != 2 {
		t.Fatalf("replay - printed %d findings, want the 2 of seed002:\n%s", n, full.String())
	}

	// Cut in the middle of the failure's line: the failure is lost, the
	// leak before it stands.
	var lines []string
	for _, l := range strings.SplitAfter(string(whole), "\n") {
		lines = append(lines, l)
		if strings.HasPrefix(l, `{"kind":"failure"`) {
			break
		}
	}
	last := lines[len(lines)-1]
	cut := strings.Join(lines[:len(lines)-1], "") + last[:len(last)/2]
	file := filepath.Join(t.TempDir(), "cut.jsonl")
	if err := os.WriteFile(file, []byte(cut), 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := run([]string{"replay", "--format", "text", file}, &stdout, &stderr)
	want := fmt.Sprintf("%s:%d: last line truncated", file, len(lines))
	if code != exitOK || !strings.Contains(stderr.String(), want) || strings.Count(stderr.String(), "\n") != 1 {
		t.Errorf("exit %d, stderr %q: want 0 and one warning line with %q", code, stderr.String(), want)
	}
	// The leak is confirmed when the events end, not by the failure: the
	// pin search it then makes was not recorded before the cut, and the
	// finding says so (what the pins were is not known).
	missing := regexp.MustCompile(` \(missing: [^)]*\)`)
	got, first := stdout.String(), strings.SplitAfter(full.String(), "\n")[0]
	if missing.ReplaceAllString(got, "") != missing.ReplaceAllString(first, "") || !strings.Contains(got, "no recorded answer for pins") {
		t.Errorf("findings of the cut recording:\n%s\nwant the one before the cut, without its pins:\n%s", got, first)
	}

	stderr.Reset()
	if code := run([]string{"replay", "-h"}, &stdout, &stderr); code != exitOK || strings.Count(stderr.String(), "usage: mntleak replay") != 1 {
		t.Errorf("replay -h: exit %d, stderr:\n%s", code, stderr.String())
	}
}
