package journald

import (
	"errors"
	"testing"

	"github.com/coreos/go-systemd/v22/journal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
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

func TestCoreCountsLosses(t *testing.T) {
	fail := true
	var sent []map[string]string
	var changes []bool
	send := func(msg string, p journal.Priority, vars map[string]string) error {
		if fail {
			return errors.New("no journal")
		}
		sent = append(sent, vars)
		return nil
	}
	core := NewCore(zap.InfoLevel, send, func(down bool, lost uint64, err error) { changes = append(changes, down) })
	log := zap.New(core).With(zap.String("component", "x"))
	log.Info("a")
	log.Info("b")
	log.Debug("filtered")
	fail = false
	log.Warn("c", zap.Int("n", 3))
	if core.Lost() != 2 || len(sent) != 1 || sent[0]["MNTLEAK_N"] != "3" || sent[0]["MNTLEAK_COMPONENT"] != "x" {
		t.Errorf("lost %d, sent %v", core.Lost(), sent)
	}
	if len(changes) != 2 || !changes[0] || changes[1] {
		t.Errorf("state changes %v, want [down up]", changes)
	}
}
