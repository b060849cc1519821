package daemon

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/internal/logkey"
	"github.com/mntleak/mntleak/metrics"
	"github.com/mntleak/mntleak/procfs"
	"github.com/mntleak/mntleak/sink/output"
	"github.com/mntleak/mntleak/state"
	"github.com/mntleak/mntleak/stream"
)

// recordedStep is one event of a recorded stream with the /proc answers
// the live correlator read while handling it.
type recordedStep struct {
	ev      *event.Event
	answers []*procfs.Record
}

func readRecording(t *testing.T, path string) (startup []*procfs.Record, steps []recordedStep) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	err = stream.Read(f, path, func(it stream.Item) error {
		switch {
		case it.Event != nil:
			steps = append(steps, recordedStep{ev: it.Event})
		case len(steps) == 0:
			startup = append(startup, it.Proc)
		default:
			steps[len(steps)-1].answers = append(steps[len(steps)-1].answers, it.Proc)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return startup, steps
}

// TestPipelineOnRecording runs the daemon's event path, without root, on
// recorded streams: /proc answers come from the recording, through the
// same recorder the live daemon uses. It checks what each stage does with
// the events: the findings logged (the same lines as the replay goldens,
// each with its fields), the stream filtered, the record complete enough that
// replaying it reaches the same findings.
func TestPipelineOnRecording(t *testing.T) {
	for _, tt := range []struct {
		scenario string
		filter   event.Filter
	}{
		{"seed002-node-exporter", event.Filter{Comms: []string{"umount"}}},
		{"seed004-privatetmp", event.Filter{}},
		{"busy-copy", event.Filter{Comms: []string{"nothing-has-this-name"}}},
	} {
		t.Run(tt.scenario, func(t *testing.T) {
			dir := filepath.Join("..", "e2e", "scenarios", tt.scenario)
			startup, steps := readRecording(t, filepath.Join(dir, "stream.jsonl"))

			var streamBuf, recordBuf bytes.Buffer
			core, logs := observer.New(zap.InfoLevel)
			p := &pipeline{
				cfg: Config{Format: output.JSON, Filter: tt.filter, Correlate: true},
				sinks: &sinks{outName: "stdout",
					out: output.NewWriter(&streamBuf, output.JSON, nil),
					rec: output.NewWriter(&recordBuf, output.JSON, nil)},
				mets: metrics.New(nil),
			}
			p.fail = func(err error) {
				if err != nil {
					t.Errorf("pipeline write failed: %v", err)
				}
			}
			replay := procfs.NewReplay()
			for _, rec := range startup {
				replay.Add(rec)
				if err := p.sinks.rec.WriteJSON(stream.ProcLine{Proc: rec}); err != nil {
					t.Fatal(err)
				}
			}
			fs, err := openFindings(context.Background(), p.cfg, p, zap.New(core))
			if err != nil {
				t.Fatal(err)
			}
			p.findings = fs
			p.corr = newCorrelator(p, replay, nil, fs.submit)
			if err := p.corr.Start(); err != nil {
				t.Fatal(err)
			}
			wantPrinted := 0
			for _, st := range steps {
				replay.AddStep(st.answers)
				if tt.filter.Match(st.ev) {
					wantPrinted++
				}
				p.handle(st.ev)
			}
			fs.close() // the findings still being enriched are logged
			if err := p.sinks.out.Close(); err != nil {
				t.Fatal(err)
			}
			if err := p.sinks.rec.Close(); err != nil {
				t.Fatal(err)
			}

			// Findings: the golden's lines, in order, each with its fields.
			golden, err := os.ReadFile(filepath.Join(dir, "findings.golden"))
			if err != nil {
				t.Fatal(err)
			}
			var wantLines []string
			for _, l := range strings.Split(string(golden), "\n") {
				if l != "" && !strings.HasPrefix(l, "{") {
					wantLines = append(wantLines, l)
				}
			}
			var gotLines []string
			for _, e := range logs.FilterLoggerName("correlate").All() {
				if _, ok := e.ContextMap()[logkey.Finding]; !ok {
					t.Errorf("finding logged without the %s field: %s", logkey.Finding, e.Message)
				}
				gotLines = append(gotLines, e.Message)
			}
			if strings.Join(gotLines, "\n") != strings.Join(wantLines, "\n") {
				t.Errorf("logged findings:\n%s\nwant (findings.golden):\n%s", strings.Join(gotLines, "\n"), strings.Join(wantLines, "\n"))
			}
			if len(wantLines) == 0 {
				t.Errorf("scenario %s has no finding: the test would prove nothing", tt.scenario)
			}

			// Stream: exactly the events the filter selects.
			if got := strings.Count(streamBuf.String(), "\n"); got != wantPrinted {
				t.Errorf("stream has %d lines, want %d (filter %+v)", got, wantPrinted, tt.filter)
			}

			// Record: every event, and the answers read; it replays to the same findings.
			var replayed []string
			if err := correlate.Replay(bytes.NewReader(recordBuf.Bytes()), "record", func(f *finding.Finding) {
				replayed = append(replayed, f.Line())
			}); err != nil {
				t.Fatalf("replay the pipeline's record: %v", err)
			}
			if strings.Join(replayed, "\n") != strings.Join(wantLines, "\n") {
				t.Errorf("the record replays to:\n%s\nwant:\n%s", strings.Join(replayed, "\n"), strings.Join(wantLines, "\n"))
			}
		})
	}
}

// TestOwnEventsDropped: the daemon's own events (its thread entering a
// namespace no process runs in, to read the table) are neither printed nor
// recorded nor correlated: they are not the node's, and the correlator
// would make the daemon a process of that namespace.
func TestOwnEventsDropped(t *testing.T) {
	var streamBuf, recordBuf bytes.Buffer
	p := &pipeline{
		cfg: Config{Format: output.JSON},
		sinks: &sinks{outName: "stdout",
			out: output.NewWriter(&streamBuf, output.JSON, nil),
			rec: output.NewWriter(&recordBuf, output.JSON, nil)},
		self: 4242,
		fail: func(err error) {
			if err != nil {
				t.Error(err)
			}
		},
	}
	for _, pid := range []uint32{4242, 4243} {
		p.handle(&event.Event{Kind: event.KindSetns, PID: pid, TID: pid, Comm: "mntleak", Syscall: "setns",
			MntNSBefore: 1, MntNSAfter: 2})
	}
	if err := p.sinks.out.Close(); err != nil {
		t.Fatal(err)
	}
	if err := p.sinks.rec.Close(); err != nil {
		t.Fatal(err)
	}
	for name, buf := range map[string]*bytes.Buffer{"stream": &streamBuf, "record": &recordBuf} {
		lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
		if len(lines) != 1 || !strings.Contains(lines[0], `"pid":4243,`) {
			t.Errorf("%s: %q, want only the event of pid 4243", name, lines)
		}
	}
}

// TestLineageKeepsTheExitOfAFUSEServer: the persistent lineage keeps the
// events state.Keep selects and, handed back by the engine as it reads it,
// the exit of a FUSE server (the fuse-daemon-killed scenario's
// gcsfuse[6535]), and no other exit: a restarted daemon or `mntleak why`
// names the dead server from it.
func TestLineageKeepsTheExitOfAFUSEServer(t *testing.T) {
	startup, steps := readRecording(t, filepath.Join("..", "e2e", "scenarios", "fuse-daemon-killed", "stream.jsonl"))
	p := &pipeline{cfg: Config{Correlate: true}, sinks: &sinks{discard: true}, fail: func(err error) {
		if err != nil {
			t.Errorf("pipeline write failed: %v", err)
		}
	}}
	replay := procfs.NewReplay()
	for _, rec := range startup {
		if rec != nil { // not the attribution settings line
			replay.Add(rec)
		}
	}
	var found []string
	p.corr = newCorrelator(p, replay, nil, func(f *finding.Finding) { found = append(found, f.Cause.String()) })
	ctx, cancel := context.WithCancel(context.Background())
	dir := t.TempDir()
	p.lineage = openLineage(ctx, dir, 0, p.corr, zap.NewNop())
	if p.lineage == nil {
		t.Fatal("the lineage could not be opened")
	}
	if err := p.corr.Start(); err != nil {
		t.Fatal(err)
	}
	wantKept := 0
	for _, st := range steps {
		replay.AddStep(st.answers)
		if state.Keep(st.ev) {
			wantKept++
		}
		p.handle(st.ev)
	}
	cancel()
	p.lineage.close()
	if strings.Join(found, ",") != "dead-fuse-daemon" {
		t.Errorf("findings %v, want the dead FUSE server's alone", found)
	}
	boot, err := state.BootID()
	if err != nil {
		t.Fatal(err)
	}
	loaded, err := state.Read(dir, boot)
	if err != nil {
		t.Fatal(err)
	}
	var exits []string
	for _, ev := range loaded.Events {
		if ev.Kind == event.KindExit {
			exits = append(exits, fmt.Sprintf("%s[%d]", ev.Comm, ev.PID))
		}
	}
	if strings.Join(exits, ",") != "gcsfuse[6535]" || len(loaded.Events) != wantKept+1 {
		t.Errorf("the lineage kept %d events, exits %v; want the %d state.Keep selects and gcsfuse[6535]'s exit",
			len(loaded.Events), exits, wantKept)
	}
}
