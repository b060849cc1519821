package output

import (
	"github.com/mntleak/mntleak/internal/logkey"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mntleak/mntleak/finding"
)

// WriteFinding queues one finding: its JSON, its human line (Text) or its
// short form (Human: the headline, its detail lines, a blank line). A
// finding is never dropped for want of room: findings are rare and each
// one is the point of the daemon.
func (w *Writer) WriteFinding(f *finding.Finding) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scratch.Reset()
	switch w.format {
	case JSON:
		if err := w.enc.Encode(f); err != nil {
			return err
		}
	case Human:
		w.scratch.WriteString(f.Block())
		w.scratch.WriteByte('\n')
	default:
		w.scratch.WriteString(f.Line())
		w.scratch.WriteByte('\n')
	}
	return w.q.push(w.scratch.Bytes(), true)
}

// WriteNote queues one line for a person (Human: trace's start line),
// never dropped; it is not an event, and a JSON or text stream has none.
func (w *Writer) WriteNote(line string) error {
	if w.format != Human {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scratch.Reset()
	w.scratch.WriteString(finding.Escape(line))
	w.scratch.WriteByte('\n')
	return w.q.push(w.scratch.Bytes(), true)
}

// FindingLevel is the level a finding is logged at: error for a failure,
// warning for a leak as it forms.
func FindingLevel(f *finding.Finding) zapcore.Level {
	if f.Kind == finding.KindLeak {
		return zapcore.WarnLevel
	}
	return zapcore.ErrorLevel
}

// FindingFields are the structured fields a finding is logged with; the
// message is its human line, the headline field its short form (the
// journal's MESSAGE).
func FindingFields(f *finding.Finding) []zap.Field {
	fields := []zap.Field{
		zap.String(logkey.Finding, string(f.Kind)),
		zap.String(logkey.FindingID, f.ID()),
		zap.String(logkey.Headline, f.Headline()),
		zap.Stringer(logkey.Cause, f.Cause),
		zap.String(logkey.Syscall, f.Call.Syscall),
		zap.String(logkey.Errno, f.Call.Errno),
		zap.String(logkey.Path, f.Object.Path),
		zap.Bool(logkey.Inferred, f.Inferred),
	}
	if f.Incomplete != nil {
		fields = append(fields, zap.Uint64(logkey.EvidenceLost, f.Incomplete.Lost))
	}
	if f.Object.Dev != 0 {
		fields = append(fields, zap.Stringer(logkey.Dev, f.Object.Dev))
	}
	if h, a := f.Actor(); h != nil {
		fields = append(fields, zap.Uint32(logkey.HolderMntNS, h.MntNS))
		if a != nil {
			fields = append(fields, zap.Int(logkey.HolderPID, a.PID), zap.String(logkey.HolderComm, a.Comm), zap.String(logkey.HolderRole, a.Role))
			if a.Container != "" {
				fields = append(fields, zap.String(logkey.Container, a.Container))
			}
			if a.Unit != "" {
				fields = append(fields, zap.String(logkey.Unit, a.Unit))
			}
		}
	}
	for _, e := range f.Evidence[min(1, len(f.Evidence)):] {
		if e.Event != nil {
			fields = append(fields, zap.String(logkey.LeakEvent, e.Event.Summary))
			break
		}
	}
	fields = append(fields, podFields(f)...)
	return append(fields, zap.Any(logkey.Detail, f))
}
