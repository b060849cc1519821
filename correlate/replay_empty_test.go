package correlate_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
)

// A recording is empty when it has neither a startup answer nor an event;
// one with only its startup snapshot (mntleak stopped before any event)
// replays to no finding, and one with events but no snapshot is not empty:
// its snapshot is what is missing.
func TestReplayEmptyMeansNoAnswerAndNoEvent(t *testing.T) {
	const (
		startup = `{"proc":{"op":"processes","processes":[]}}` + "\n" + `{"proc":{"op":"hostns","mntns":4026531840}}` + "\n"
		exit    = `{"kind":"exit","time":"2026-11-24T23:29:43.977652558Z","mono_ns":15776017005860,"pid":20996,"tid":20996,"comm":"sleep","mntns":4026531840,"syscall_nr":-1,"ret":0}` + "\n"
	)
	for _, tt := range []struct {
		name, rec, err string
	}{
		{"nothing", "", "rec: the recording is empty (make one with mntleak trace --record FILE)"},
		{"only the startup snapshot", startup, "<nil>"},
		{"only an event", exit, "rec: startup snapshot: replay: no recorded answer for processes"},
	} {
		var got []*finding.Finding
		err := correlate.Replay(strings.NewReader(tt.rec), "rec", func(f *finding.Finding) { got = append(got, f) })
		if fmt.Sprint(err) != tt.err || len(got) != 0 {
			t.Errorf("%s: error %v and %d findings, want %s and none", tt.name, err, len(got), tt.err)
		}
	}
}
