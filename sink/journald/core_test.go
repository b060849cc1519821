package journald

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/coreos/go-systemd/v22/journal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mntleak/mntleak/internal/logkey"
)

func TestFieldNamesAndPriorities(t *testing.T) {
	for k, want := range map[string]string{"holder_pid": "MNTLEAK_HOLDER_PID", "cause": "MNTLEAK_CAUSE", "a.b-c": "MNTLEAK_A_B_C"} {
		if got := FieldName(k); got != want {
			t.Errorf("FieldName(%q) = %q, want %q", k, got, want)
		}
	}
	for l, want := range map[zapcore.Level]journal.Priority{zapcore.ErrorLevel: journal.PriErr, zapcore.WarnLevel: journal.PriWarning,
		zapcore.InfoLevel: journal.PriInfo, zapcore.DebugLevel: journal.PriDebug} {
		if got := Priority(l); got != want {
			t.Errorf("Priority(%s) = %d, want %d", l, got, want)
		}
	}
}

// fakeJournal records what it is sent; it fails while down and blocks while
// stalled, like a journald that is gone or SIGSTOPped.
type fakeJournal struct {
	mu      sync.Mutex
	down    bool
	stalled chan struct{} // nil: not stalled
	sent    []map[string]string
}

func (f *fakeJournal) send(msg string, p journal.Priority, vars map[string]string) error {
	f.mu.Lock()
	stall, down := f.stalled, f.down
	f.mu.Unlock()
	if stall != nil {
		<-stall
	}
	if down {
		return errors.New("no journal")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.sent = append(f.sent, vars)
	return nil
}

func (f *fakeJournal) set(fn func(*fakeJournal)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func (f *fakeJournal) entries() []map[string]string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]map[string]string(nil), f.sent...)
}

func TestCoreCountsLosses(t *testing.T) {
	fake := &fakeJournal{down: true}
	var mu sync.Mutex
	var changes []bool
	core := NewCore(zap.InfoLevel, fake.send, func(down bool, lost uint64, err error) {
		mu.Lock()
		changes = append(changes, down)
		mu.Unlock()
	})
	defer core.Close(time.Second)
	log := zap.New(core).With(zap.String("component", "x"))
	log.Info("a")
	log.Info("b")
	log.Debug("filtered")
	if err := core.Sync(); err != nil {
		t.Fatal(err)
	}
	fake.set(func(f *fakeJournal) { f.down = false })
	log.Warn("c", zap.Int("n", 3))
	if err := core.Sync(); err != nil {
		t.Fatal(err)
	}
	sent := fake.entries()
	if core.Lost() != 2 || len(sent) != 1 || sent[0]["MNTLEAK_N"] != "3" || sent[0]["MNTLEAK_COMPONENT"] != "x" {
		t.Errorf("lost %d, sent %v", core.Lost(), sent)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(changes) != 2 || !changes[0] || changes[1] {
		t.Errorf("state changes %v, want [down up]", changes)
	}
}

// TestCoreStalledJournal: while the journal does not take entries, logging
// never blocks, the overflow is counted, and a finding logged after a flood
// of other entries is still sent once the journal takes entries again.
func TestCoreStalledJournal(t *testing.T) {
	fake := &fakeJournal{stalled: make(chan struct{})}
	core := NewCore(zap.InfoLevel, fake.send, nil)
	defer core.Close(time.Second)
	log := zap.New(core)
	start := time.Now()
	for i := 0; i < 3*OtherQueue; i++ {
		log.Info("raw event", zap.Int("i", i))
	}
	log.Error("the finding", zap.String("finding", "failure"))
	if d := time.Since(start); d > time.Second {
		t.Errorf("logging to a stalled journal took %v", d)
	}
	if core.Dropped() < OtherQueue {
		t.Errorf("dropped %d, want at least %d", core.Dropped(), OtherQueue)
	}
	if err := core.Sync(); err == nil {
		t.Error("Sync succeeded with the journal stalled")
	}
	fake.set(func(f *fakeJournal) { close(f.stalled); f.stalled = nil })
	if err := core.Close(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	found := false
	for _, e := range fake.entries() {
		found = found || e["MNTLEAK_FINDING"] == "failure"
	}
	if !found {
		t.Error("the finding was not sent after the stall")
	}
}

// TestFindingMessageIsItsHeadline: a finding's entry has its headline as
// MESSAGE and its long line as MNTLEAK_SUMMARY; any other entry keeps its
// message.
func TestFindingMessageIsItsHeadline(t *testing.T) {
	type sent struct {
		msg  string
		vars map[string]string
	}
	got := make(chan sent, 2)
	core := NewCore(zap.InfoLevel, func(msg string, _ journal.Priority, vars map[string]string) error {
		got <- sent{msg, vars}
		return nil
	}, nil)
	defer core.Close(time.Second) //nolint:errcheck // a test's fake journal
	log := zap.New(core)
	log.Error("the long line", zap.String(logkey.Finding, "failure"), zap.String(logkey.Headline, "the headline"))
	log.Info("tracing", zap.String(logkey.Headline, "not a finding"))
	if s := <-got; s.msg != "the headline" || s.vars[summaryField] != "the long line" || s.vars["MNTLEAK_HEADLINE"] != "the headline" {
		t.Errorf("finding sent as %q, %s=%q", s.msg, summaryField, s.vars[summaryField])
	}
	if s := <-got; s.msg != "tracing" || s.vars[summaryField] != "" {
		t.Errorf("lifecycle entry sent as %q, %s=%q", s.msg, summaryField, s.vars[summaryField])
	}
}
