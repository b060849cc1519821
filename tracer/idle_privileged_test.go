package tracer_test

import (
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/mntleak/mntleak/tracer"
)

// TestReaderWakesOnlyWhenDue: with nothing to read, the reader wakes for
// its lost check and, with exits quiet, every QuietExitDelay: about 25
// times a second, whatever other records come (they are not timeouts).
// The poller takes its timeout in whole milliseconds, rounded down: a
// deadline less than a millisecond away made it return at once, again
// and again until the deadline passed (hundreds of wakeups a second, a
// few percent of a core on an idle node).
func TestReaderWakesOnlyWhenDue(t *testing.T) {
	c := startTracerWith(t, tracer.Config{Buffer: tracer.BufferRingbuf}, zaptest.NewLogger(t))
	if err := c.tr.SetQuietExits(true); err != nil {
		t.Fatal(err)
	}
	const span = 2 * time.Second
	due := int(span/tracer.QuietExitDelay + span/tracer.DefaultLostCheckInterval) // 50
	before := timeouts(t, c.tr)
	time.Sleep(span)
	if n := timeouts(t, c.tr) - before; n > uint64(due+due/2) {
		t.Errorf("the reader returned at its deadline %d times in %v; its wakeups come due %d times", n, span, due)
	} else {
		t.Logf("%d timeouts in %v (%d due)", n, span, due)
	}
}

func timeouts(t *testing.T, tr *tracer.Tracer) uint64 {
	t.Helper()
	st, err := tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	return st.Timeouts
}
