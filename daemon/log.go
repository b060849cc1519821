package daemon

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mntleak/mntleak/internal/logging"
	"github.com/mntleak/mntleak/internal/logkey"
	"github.com/mntleak/mntleak/sink/journald"
	"github.com/mntleak/mntleak/sink/output"
)

// The log on stderr is queued too: under systemd stderr is a stream to
// journald, which blocks once journald stops reading, and the reader logs
// findings. Findings are kept over the queue's capacity, up to their own
// cap, far beyond what a burst of failures produces.
const (
	stderrQueueBytes   = 1 << 20
	stderrFindingBytes = 16 << 20
)

// stderrCloseTimeout bounds the last flush of the log, after the outputs'.
const stderrCloseTimeout = 200 * time.Millisecond

// Log is the daemon's logger and where it writes: stderr behind a queue,
// teed with the journal. It is opened before Run, so that a bad
// configuration is reported on it, and closed after Run returns.
type Log struct {
	*zap.Logger
	stderr  *output.Lines
	journal *journald.Core // nil without
	sock    *journald.Socket
}

// OpenLog returns the daemon's logger: stderr behind a queue, teed with the
// journal when it is asked for (or, with auto, there).
func OpenLog(cfg LogConfig, stderr io.Writer) (*Log, error) {
	log, q, err := newLogger(stderr, cfg.Level, cfg.Format, cfg.FindingsOnStdout)
	if err != nil {
		return nil, err
	}
	l := &Log{stderr: q}
	if sock := journald.NewSocket(cfg.JournalSocket, 0); cfg.Journald == JournaldOn || (cfg.Journald == JournaldAuto && sock.Available()) {
		log, l.journal = journald.Tee(log, zap.InfoLevel, sock.Send)
		l.sock = sock
	}
	l.Logger = log
	return l, nil
}

// Wake has the lines logged so far go out on stderr now, not at the
// queue's next tick, without waiting for the write (a blocked stderr must
// not hold the caller): for the line whoever started the daemon waits for.
func (l *Log) Wake() { l.stderr.Wake() }

// Close flushes the journal (its outage reports go to stderr), then
// stderr. The journal was normally closed already, within the exit budget.
func (l *Log) Close() {
	if l.journal != nil {
		l.journal.Close(journalCloseTimeout) //nolint:errcheck // what is left is on stderr
		l.sock.Close()
	}
	l.stderr.CloseWithin(stderrCloseTimeout) //nolint:errcheck // nowhere left to say it
}

// newLogger returns the daemon's logger on a queue in front of stderr;
// with findingsElsewhere (stdout shows them), findings are left out of it.
func newLogger(stderr io.Writer, level, format string, findingsElsewhere bool) (*zap.Logger, *output.Lines, error) {
	q := output.NewLines(stderr, output.Options{QueueBytes: stderrQueueBytes, ForcedBytes: stderrFindingBytes, CloseTimeout: outputCloseTimeout},
		stderrMarker(format))
	normal, err := logging.New(q.Writer(false), level, format)
	if err != nil {
		q.CloseWithin(0)
		return nil, nil, err
	}
	findings, err := logging.New(q.Writer(true), level, format)
	if err != nil {
		q.CloseWithin(0)
		return nil, nil, err
	}
	fcore := findings.Core()
	if findingsElsewhere {
		fcore = zapcore.NewNopCore()
	}
	return zap.New(findingRouter{normal: normal.Core(), finding: fcore}), q, nil
}

// stderrMarker is the line put in the log where lines were dropped.
func stderrMarker(format string) func(n uint64, since time.Time) []byte {
	const msg = "log lines dropped: stderr did not keep up"
	return func(n uint64, since time.Time) []byte {
		if format != "json" {
			return fmt.Appendf(nil, "%s\tWARN\t%s\t{%q: %d}\n", time.Now().Format("2006-01-02T15:04:05.000Z0700"), msg, logkey.Dropped, n)
		}
		b, _ := json.Marshal(map[string]any{"level": "warn", "ts": time.Now().Format("2006-01-02T15:04:05.000Z0700"), "msg": msg, logkey.Dropped: n})
		return append(b, '\n')
	}
}

// findingRouter sends entries that carry a finding to the core whose lines
// are never dropped for want of room, and the others to the normal one.
type findingRouter struct {
	normal, finding zapcore.Core
}

func (r findingRouter) Enabled(l zapcore.Level) bool { return r.normal.Enabled(l) }

func (r findingRouter) With(fields []zapcore.Field) zapcore.Core {
	return findingRouter{normal: r.normal.With(fields), finding: r.finding.With(fields)}
}

func (r findingRouter) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if r.Enabled(e.Level) {
		return ce.AddCore(e, r)
	}
	return ce
}

func (r findingRouter) Write(e zapcore.Entry, fields []zapcore.Field) error {
	for _, f := range fields {
		if f.Key == logkey.Finding {
			return r.finding.Write(e, fields)
		}
	}
	return r.normal.Write(e, fields)
}

func (r findingRouter) Sync() error { return nil } // the queue's drain writes; Close flushes
