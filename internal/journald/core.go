package journald

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"

	"github.com/coreos/go-systemd/v22/journal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mntleak/mntleak/internal/logkey"
)

// SocketPath is where journald listens for native-protocol datagrams.
const SocketPath = "/run/systemd/journal/socket"

// Sender sends one entry; journal.Send in production.
type Sender func(message string, priority journal.Priority, vars map[string]string) error

// Available reports whether a journal socket is there.
func Available() bool { return journal.Enabled() }

// Core is a zapcore.Core writing to the journal.
type Core struct {
	zapcore.LevelEnabler
	send    Sender
	context []zapcore.Field
	state   *state
}

// state is shared by a core and its With() children: the loss accounting.
type state struct {
	mu       sync.Mutex
	lost     uint64
	down     bool
	onChange func(down bool, lost uint64, err error)
}

// NewCore returns a core sending entries at or above level. onChange is
// called when delivery starts failing (down=true, with the error) and when
// it works again (down=false, with the entries lost meanwhile).
func NewCore(level zapcore.LevelEnabler, send Sender, onChange func(down bool, lost uint64, err error)) *Core {
	if send == nil {
		send = journal.Send
	}
	return &Core{LevelEnabler: level, send: send, state: &state{onChange: onChange}}
}

// With implements zapcore.Core.
func (c *Core) With(fields []zapcore.Field) zapcore.Core {
	clone := *c
	clone.context = append(append([]zapcore.Field(nil), c.context...), fields...)
	return &clone
}

// Check implements zapcore.Core.
func (c *Core) Check(e zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if c.Enabled(e.Level) {
		return ce.AddCore(e, c)
	}
	return ce
}

// Write implements zapcore.Core. A failed send is counted, never returned:
// the tee's other core (stderr) has the entry.
func (c *Core) Write(e zapcore.Entry, fields []zapcore.Field) error {
	enc := zapcore.NewMapObjectEncoder()
	for _, f := range c.context {
		f.AddTo(enc)
	}
	for _, f := range fields {
		f.AddTo(enc)
	}
	vars := make(map[string]string, len(enc.Fields)+2)
	for k, v := range enc.Fields {
		vars[FieldName(k)] = value(v)
	}
	if e.LoggerName != "" {
		vars["MNTLEAK_LOGGER"] = e.LoggerName
	}
	vars["SYSLOG_IDENTIFIER"] = "mntleak"
	err := c.send(e.Message, Priority(e.Level), vars)
	c.state.record(err)
	return nil
}

// Sync implements zapcore.Core.
func (c *Core) Sync() error { return nil }

// Lost returns how many entries could not be delivered.
func (c *Core) Lost() uint64 {
	c.state.mu.Lock()
	defer c.state.mu.Unlock()
	return c.state.lost
}

func (s *state) record(err error) {
	s.mu.Lock()
	changed, down, lost := false, s.down, s.lost
	if err != nil {
		s.lost++
		lost = s.lost
		if !s.down {
			s.down, changed, down = true, true, true
		}
	} else if s.down {
		s.down, changed, down = false, true, false
	}
	s.mu.Unlock()
	if changed && s.onChange != nil {
		s.onChange(down, lost, err)
	}
}

// FieldName turns a zap field key into a journal field name:
// holder_pid -> MNTLEAK_HOLDER_PID. Journal field names allow only A-Z,
// 0-9 and _.
func FieldName(key string) string {
	var b strings.Builder
	b.WriteString("MNTLEAK_")
	for _, r := range strings.ToUpper(key) {
		if (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9') {
			b.WriteRune(r)
		} else {
			b.WriteByte('_')
		}
	}
	return b.String()
}

func value(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case fmt.Stringer:
		return x.String()
	case bool, int, int64, int32, uint, uint64, uint32, float64:
		return fmt.Sprint(x)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Priority maps a zap level to a syslog priority.
func Priority(l zapcore.Level) journal.Priority {
	switch {
	case l >= zapcore.DPanicLevel:
		return journal.PriCrit
	case l == zapcore.ErrorLevel:
		return journal.PriErr
	case l == zapcore.WarnLevel:
		return journal.PriWarning
	case l == zapcore.InfoLevel:
		return journal.PriInfo
	}
	return journal.PriDebug
}

// Tee returns a logger writing to both base's core and the journal core;
// journal outages are reported through base alone.
func Tee(base *zap.Logger, level zapcore.LevelEnabler, send Sender) (*zap.Logger, *Core) {
	var core *Core
	report := base.Named("journald")
	core = NewCore(level, send, func(down bool, lost uint64, err error) {
		if down {
			report.Warn("journal unavailable: entries go to stderr only", zap.Error(err))
			return
		}
		report.Info("journal available again", zap.Uint64(logkey.Lost, lost))
	})
	return zap.New(zapcore.NewTee(base.Core(), core)), core
}
