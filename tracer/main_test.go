package tracer_test

import (
	"fmt"
	"os"
	"testing"

	"go.uber.org/zap"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/tracer"
)

// envHelper makes the test binary run tracer.New once and exit, so a test
// can run it under another uid or with fewer capabilities (preflight).
const envHelper = "MNTLEAK_TRACER_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(envHelper) == "new" {
		os.Exit(helperNew())
	}
	os.Exit(m.Run())
}

// helperNew prints New's error as mntleak would, on one line, and fails.
func helperNew() int {
	tr, err := tracer.New(tracer.Config{Sink: func(*event.Event) {}}, zap.NewNop())
	if err != nil {
		fmt.Fprintf(os.Stderr, "mntleak trace: %v\n", err)
		return 1
	}
	tr.Close()
	return 0
}
