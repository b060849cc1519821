package daemon

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/sink/output"
)

// TestIsDevNull: events are not encoded for /dev/null, and only for it.
func TestIsDevNull(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	zero, err := os.OpenFile("/dev/zero", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	for _, tt := range []struct {
		name string
		w    io.Writer
		want bool
	}{{"/dev/null", null, true}, {"a file", file, false}, {"/dev/zero", zero, false}, {"a buffer", &bytes.Buffer{}, false}} {
		if got := isDevNull(tt.w); got != tt.want {
			t.Errorf("isDevNull(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

// TestSinksForAPerson: with Format Human, stdout shows the findings and a
// note, the events only with Events; with an Output file the events go
// there as text and stdout still shows the findings.
func TestSinksForAPerson(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name        string
		cfg         Config
		discard     bool
		sharedOut   bool
		eventsInOut bool
	}{
		{name: "findings only", cfg: Config{Format: output.Human}, discard: true, sharedOut: true},
		{name: "with events", cfg: Config{Format: output.Human, Events: true}, sharedOut: true, eventsInOut: true},
		{name: "events to a file", cfg: Config{Format: output.Human, Output: filepath.Join(dir, "events.txt")}, eventsInOut: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var stdout bytes.Buffer
			s, err := openSinks(context.Background(), tt.cfg, &stdout, &Log{stderr: output.NewLines(io.Discard, output.Options{}, nil)})
			if err != nil {
				t.Fatal(err)
			}
			if s.discard != tt.discard || (s.people == s.out) != tt.sharedOut || s.people == nil {
				t.Fatalf("discard %v, stdout shared with the events %v; want %v, %v", s.discard, s.people == s.out, tt.discard, tt.sharedOut)
			}
			if err := s.people.WriteNote("mntleak: watching"); err != nil {
				t.Fatal(err)
			}
			ev := &event.Event{Kind: event.KindMount, Comm: "mount", PID: 7, Syscall: "mount"}
			if !s.discard {
				if err := s.out.Write(ev); err != nil {
					t.Fatal(err)
				}
			}
			s.close(zap.NewNop())
			events := stdout.String()
			if tt.cfg.Output != "" {
				b, err := os.ReadFile(tt.cfg.Output)
				if err != nil {
					t.Fatal(err)
				}
				events = string(b)
				if strings.Contains(events, "mntleak: watching") {
					t.Errorf("the note went to the events file: %q", events)
				}
			}
			if got := strings.Contains(events, ev.Text()); got != tt.eventsInOut {
				t.Errorf("event shown %v, want %v:\n%s", got, tt.eventsInOut, events)
			}
			if !strings.HasPrefix(stdout.String(), "mntleak: watching\n") {
				t.Errorf("stdout %q, want the note first", stdout.String())
			}
		})
	}
}

// TestStartLine: the start line names the node and how to see more, in
// one line a terminal shows whole.
func TestStartLine(t *testing.T) {
	for _, cfg := range []Config{{NodeName: "node-1", Correlate: true}, {NodeName: "node-1", Correlate: true, Events: true}, {NodeName: "node-1"}} {
		s := StartLine(cfg)
		if !strings.Contains(s, " on node-1; ") || strings.Contains(s, "\n") || len(s) > 160 ||
			strings.Contains(s, "--events") == cfg.Events || strings.Contains(s, "findings are off") == cfg.Correlate {
			t.Errorf("%+v: %q", cfg, s)
		}
	}
}
