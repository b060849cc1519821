package output

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"

	"github.com/mntleak/mntleak/finding"
)

// gate is a destination that blocks every write until opened, like a pipe
// nobody reads.
type gate struct {
	open chan struct{}
	mu   sync.Mutex
	buf  bytes.Buffer
}

func newGate() *gate { return &gate{open: make(chan struct{})} }

func (g *gate) Write(p []byte) (int, error) {
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

func (g *gate) String() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.String()
}

func storm(t *testing.T, w *Writer, n int, first uint32) {
	t.Helper()
	for i := 0; i < n; i++ {
		ev := &event.Event{Kind: event.KindMount, PID: first + uint32(i), Comm: "mount", SyscallNr: 165, Target: "/mnt/x"}
		if err := w.Write(ev); err != nil {
			t.Fatal(err)
		}
	}
}

// TestWriterStuckDestination: with a destination that blocks, writes still
// return at once, the queue stays within its capacity and the drops are
// counted; once the destination takes lines again, output resumes, with a
// lost line marking the gap, and every line is whole.
func TestWriterStuckDestination(t *testing.T) {
	for _, format := range []Format{JSON, Text} {
		t.Run(format.String(), func(t *testing.T) {
			dst := newGate()
			const capacity = 32 << 10
			w := NewWriterOptions(dst, format, nil, Options{QueueBytes: capacity, CloseTimeout: 5 * time.Second})
			// A write that waited for the destination would never return:
			// the limit is generous (the race detector is slow).
			start := time.Now()
			storm(t, w, 5000, 1)
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("5000 writes to a stuck destination took %v", d)
			}
			if w.Dropped() == 0 {
				t.Fatal("nothing dropped by a stuck destination")
			}
			// The drain holds at most one batch, the queue at most its capacity.
			if p := w.q.pendingBytes(); p > capacity {
				t.Errorf("%d bytes pending, capacity %d", p, capacity)
			}
			close(dst.open)
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			dropped := w.Dropped()
			storm(t, w, 10, 100000)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			out := dst.String()
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			last := lines[len(lines)-1]
			if !strings.Contains(last, "100009") {
				t.Errorf("last line %q: output did not resume", last)
			}
			var markers, lost uint64
			for _, l := range lines {
				if format == JSON {
					var ev event.Event
					if err := json.Unmarshal([]byte(l), &ev); err != nil {
						t.Fatalf("line %q: %v", l, err)
					}
					if ev.Kind == event.KindLost {
						markers++
						lost += ev.Lost
					}
				} else if strings.Contains(l, " lost ") {
					markers++
				}
			}
			// A marker for each run of drops: the drain took a batch
			// between runs.
			if markers == 0 || (format == JSON && lost != dropped) {
				t.Errorf("%d lost lines counting %d, %d dropped", markers, lost, dropped)
			}
		})
	}
}

// TestWriterFindingsNotDropped: a finding is queued even when events are
// being dropped.
func TestWriterFindingsNotDropped(t *testing.T) {
	dst := newGate()
	w := NewWriterOptions(dst, Text, nil, Options{QueueBytes: 4 << 10})
	storm(t, w, 1000, 1)
	f := &finding.Finding{Kind: finding.KindLeak, Object: finding.Object{Path: "/var/lib/finding-kept"}}
	if err := w.WriteFinding(f); err != nil {
		t.Fatal(err)
	}
	close(dst.open)
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dst.String(), "/var/lib/finding-kept") {
		t.Errorf("finding dropped:\n%s", dst.String())
	}
}

// TestWriterCloseTimeout: a daemon told to stop does not wait for ever on a
// destination nobody reads.
func TestWriterCloseTimeout(t *testing.T) {
	dst := newGate()
	defer close(dst.open)
	w := NewWriterOptions(dst, JSON, nil, Options{CloseTimeout: 200 * time.Millisecond})
	storm(t, w, 1000, 1)
	start := time.Now()
	err := w.Close()
	if !errors.Is(err, ErrCloseTimeout) {
		t.Errorf("Close: %v, want ErrCloseTimeout", err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d)
	}
	if err := w.Close(); !errors.Is(err, ErrCloseTimeout) && err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// TestWriterReopen: logrotate renames the file and asks for a reopen; the
// old file is complete and new lines go to a new file at the same path.
func TestWriterReopen(t *testing.T) {
	for _, tt := range []struct {
		name     string
		truncate bool
	}{{"truncate", true}, {"append", false}} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "events.jsonl")
			if err := os.WriteFile(path, []byte("{\"old\":true}\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			w, err := OpenFile(path, JSON, tt.truncate, Options{})
			if err != nil {
				t.Fatal(err)
			}
			storm(t, w, 100, 1)
			if err := os.Rename(path, path+".1"); err != nil {
				t.Fatal(err)
			}
			if err := w.Reopen(); err != nil {
				t.Fatal(err)
			}
			storm(t, w, 50, 1000)
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			wantOld := 100
			if !tt.truncate {
				wantOld++
			}
			if n := countLines(t, path+".1"); n != wantOld {
				t.Errorf("rotated file has %d lines, want %d", n, wantOld)
			}
			if n := countLines(t, path); n != 50 {
				t.Errorf("new file has %d lines, want 50", n)
			}
			if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
				t.Errorf("new file: %v %v", st.Mode(), err)
			}
		})
	}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if !json.Valid(sc.Bytes()) {
			t.Errorf("%s: line %q is not JSON", path, sc.Text())
		}
		n++
	}
	return n
}

// TestLinesForcedCap: forced lines pass the capacity up to ForcedBytes,
// then they too are dropped and counted; ordinary ones stop at the
// capacity.
func TestLinesForcedCap(t *testing.T) {
	for _, tt := range []struct {
		name        string
		force       bool
		wantDropped bool
	}{
		{"ordinary lines stop at the capacity", false, true},
		{"forced lines stop at the forced cap", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dst := newGate()
			l := NewLines(dst, Options{QueueBytes: 1 << 10, ForcedBytes: 8 << 10}, func(n uint64, _ time.Time) []byte { return []byte("dropped\n") })
			w := l.Writer(tt.force)
			line := []byte(strings.Repeat("y", 99) + "\n")
			for i := 0; i < 200; i++ { // 20 KB
				if _, err := w.Write(line); err != nil {
					t.Fatal(err)
				}
			}
			time.Sleep(2 * FlushInterval) // the drain takes a batch and blocks
			pending := l.q.pendingBytes()
			limit := 1 << 10
			if tt.force {
				limit = 8 << 10
			}
			if pending > limit || (l.Dropped() > 0) != tt.wantDropped {
				t.Errorf("%d bytes pending (limit %d), %d dropped", pending, limit, l.Dropped())
			}
			close(dst.open)
			if err := l.CloseWithin(5 * time.Second); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// lineSink is a destination that hands each write to a channel.
type lineSink chan string

func (s lineSink) Write(p []byte) (int, error) {
	s <- string(p)
	return len(p), nil
}

// TestLinesWake: a line that is no finding waits for the drain's tick
// (here an hour away: it is not written within a second), and Wake writes
// it out at once (the daemon's "tracing", which whoever started it waits
// for, waited up to FlushInterval: its start read 100 ms slower in turn).
func TestLinesWake(t *testing.T) {
	out := make(lineSink, 4)
	q := makeQueue(out, nil, 0, func(uint64, time.Time) []byte { return nil }, nil)
	go q.drain(time.Hour)
	l := &Lines{q: q}
	defer l.CloseWithin(time.Second) //nolint:errcheck // the test's own queue

	if _, err := l.Writer(false).Write([]byte("waits\n")); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-out:
		t.Fatalf("written before its tick, unwoken: %q", got)
	case <-time.After(time.Second):
	}
	l.Wake()
	select {
	case got := <-out:
		if got != "waits\n" {
			t.Errorf("written %q, want %q", got, "waits\n")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("not written 10 s after Wake")
	}
}
