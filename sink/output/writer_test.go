package output

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
)

type closeCounter struct {
	bytes.Buffer
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

func TestWriterEncodes(t *testing.T) {
	ev := &event.Event{Kind: event.KindUmount, Time: time.Unix(0, 0), PID: 1, TID: 1, Comm: "umount", SyscallNr: 166, Target: "/x"}
	for _, format := range []Format{JSON, Text} {
		t.Run(format.String(), func(t *testing.T) {
			dst := &closeCounter{}
			w := NewWriter(dst, format, dst)
			for i := 0; i < 3; i++ {
				if err := w.Write(ev); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil || dst.closed != 1 {
				t.Fatalf("second Close: %v, file closed %d times", err, dst.closed)
			}
			lines := strings.Split(strings.TrimSuffix(dst.String(), "\n"), "\n")
			if len(lines) != 3 {
				t.Fatalf("%d lines: %q", len(lines), dst.String())
			}
			if format == JSON {
				var back event.Event
				if err := json.Unmarshal([]byte(lines[0]), &back); err != nil || back.Target != "/x" {
					t.Errorf("line %q: %v", lines[0], err)
				}
			} else if lines[0] != ev.Text() {
				t.Errorf("line %q, want %q", lines[0], ev.Text())
			}
		})
	}
}

// TestWriterRefusesWhatEncodingJSONRefuses: an event AppendJSON does not
// take (a kind out of range) is encoding/json's error, and no line.
func TestWriterRefusesWhatEncodingJSONRefuses(t *testing.T) {
	dst := &closeCounter{}
	w := NewWriter(dst, JSON, dst)
	err := w.Write(&event.Event{Kind: event.Kind(999), Time: time.Unix(0, 0)})
	if err == nil || !strings.Contains(err.Error(), "invalid event kind 999") {
		t.Errorf("Write of kind 999: %v, want encoding/json's error", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if dst.String() != "" {
		t.Errorf("wrote %q, want nothing", dst.String())
	}
}

// TestWriterFlushesOnTimer: a lone event reaches the destination without
// Close, within a few flush intervals.
func TestWriterFlushesOnTimer(t *testing.T) {
	var mu privtest.SyncBuffer
	w := NewWriter(&mu, JSON, nil)
	defer w.Close()
	if err := w.Write(&event.Event{Kind: event.KindExit, SyscallNr: -1}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * FlushInterval)
	for mu.String() == "" {
		if time.Now().After(deadline) {
			t.Fatal("event not flushed")
		}
		time.Sleep(FlushInterval / 4)
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("broken pipe") }

func TestWriterReportsWriteErrors(t *testing.T) {
	w := NewWriter(failingWriter{}, Text, nil)
	defer w.Close()
	ev := &event.Event{Kind: event.KindExit, SyscallNr: -1}
	var err error
	// The first writes land in the buffer; the error surfaces at the flush.
	for i := 0; i < 10000 && err == nil; i++ {
		err = w.Write(ev)
	}
	if err == nil {
		err = w.Flush()
	}
	if err == nil || !strings.Contains(err.Error(), "broken pipe") {
		t.Fatalf("error %v, want broken pipe", err)
	}
	if err := w.Write(ev); err == nil {
		t.Error("write after an error succeeded")
	}
}

func TestParseFormat(t *testing.T) {
	if f, err := ParseFormat("json"); err != nil || f != JSON {
		t.Errorf("json: %v %v", f, err)
	}
	if _, err := ParseFormat("csv"); err == nil {
		t.Error("csv accepted")
	}
}
