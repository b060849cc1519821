package journaldtest_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/journal"

	"github.com/mntleak/mntleak/e2e/testkit/journaldtest"
	"github.com/mntleak/mntleak/sink/journald"
)

// TestJournalOutlivesTheIdleExit: a journald of a journal namespace exits
// by itself after 30 s with nothing sent to it and no stream client
// ("Server is idle, exiting.": systemd 252's IDLE_TIMEOUT_USEC, where
// systemd's socket unit would start it again on the next message; here
// nothing would). A test's journal stays up however long the test takes
// to log: an entry sent after 35 s of silence is there.
func TestJournalOutlivesTheIdleExit(t *testing.T) {
	j := journaldtest.Start(t)
	time.Sleep(35 * time.Second)
	s := journald.NewSocket(j.Socket, 0)
	defer s.Close()
	id := fmt.Sprintf("%d", time.Now().UnixNano())
	if err := s.Send("after the silence", journal.PriErr, map[string]string{"MNTLEAK_TEST_ID": id}); err != nil {
		t.Fatalf("35 s after the journal started: %v", err)
	}
	if got := j.Entries(t, 30*time.Second, "MNTLEAK_TEST_ID="+id); len(got) != 1 {
		t.Errorf("%d entries with MNTLEAK_TEST_ID=%s, want 1", len(got), id)
	}
}
