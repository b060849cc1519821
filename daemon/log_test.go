package daemon

import (
	"bytes"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/mntleak/mntleak/internal/logkey"
)

// gatedWriter blocks every write until opened: a stderr nobody reads.
type gatedWriter struct {
	open chan struct{}
	mu   sync.Mutex
	buf  bytes.Buffer
}

func (g *gatedWriter) Write(p []byte) (int, error) {
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

// TestLoggerStuckStderr: with stderr stuck, logging never waits; ordinary
// lines past the queue's capacity are dropped, counted and marked, and
// every finding is kept.
func TestLoggerStuckStderr(t *testing.T) {
	for _, format := range []string{"json", "console"} {
		t.Run(format, func(t *testing.T) {
			dst := &gatedWriter{open: make(chan struct{})}
			log, q, err := newLogger(dst, "info", format, false)
			if err != nil {
				t.Fatal(err)
			}
			filler := strings.Repeat("x", 1000)
			start := time.Now()
			for i := 0; i < 3000; i++ { // 3 MB against a 1 MiB queue
				log.Info("ordinary", zap.String("filler", filler))
				if i%30 == 0 {
					log.Error("a finding", zap.String(logkey.Finding, "failure"), zap.Int("n", i))
				}
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("logging to a stuck stderr took %v", d)
			}
			if q.Dropped() == 0 {
				t.Fatal("nothing dropped")
			}
			close(dst.open)
			if err := q.CloseWithin(5 * time.Second); err != nil {
				t.Fatal(err)
			}
			out := dst.buf.String()
			if n := strings.Count(out, "a finding"); n != 100 {
				t.Errorf("%d findings on stderr, want 100", n)
			}
			if !strings.Contains(out, "log lines dropped: stderr did not keep up") {
				t.Error("no line marks the drop")
			}
			for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
				if format == "json" && !strings.HasPrefix(line, "{") {
					t.Fatalf("line %q", line)
				}
			}
		})
	}
}

// TestLoggerFindingsOnStdout: when stdout shows the findings (a person's
// terminal), stderr leaves them out and keeps every other line.
func TestLoggerFindingsOnStdout(t *testing.T) {
	for _, elsewhere := range []bool{false, true} {
		var dst bytes.Buffer
		log, q, err := newLogger(&dst, "info", "json", elsewhere)
		if err != nil {
			t.Fatal(err)
		}
		log.Info("tracing")
		log.Error("EBUSY umount2 /x: held by sleep[1]", zap.String(logkey.Finding, "failure"))
		if err := q.CloseWithin(time.Second); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(dst.String(), "EBUSY"); got == elsewhere || !strings.Contains(dst.String(), `"msg":"tracing"`) {
			t.Errorf("findings on stdout %v: stderr %q", elsewhere, dst.String())
		}
	}
}
