package journald

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/coreos/go-systemd/v22/journal"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mntleak/mntleak/internal/logkey"
)

// summaryField is a finding's long line (the log's message) in the
// journal, whose MESSAGE is the finding's headline.
const summaryField = "MNTLEAK_SUMMARY"

// SocketPath is where journald listens for native-protocol datagrams.
const SocketPath = "/run/systemd/journal/socket"

// Sender sends one entry; Socket.Send in production.
type Sender func(message string, priority journal.Priority, vars map[string]string) error

// Available reports whether a journal socket is there.
func Available() bool { return NewSocket(SocketPath, 0).Available() }

// Queue capacities, in entries. Findings have their own queue, drained
// first, so that a storm of lifecycle or raw-event entries never pushes a
// finding out.
const (
	FindingQueue = 1024
	OtherQueue   = 1024
)

// SyncTimeout bounds how long Sync waits for the queued entries to be sent.
const SyncTimeout = 500 * time.Millisecond

// Core is a zapcore.Core writing to the journal. Write only queues the
// entry: a goroutine of its own sends it, so a journald that is slow,
// stopped or gone never blocks the logger's caller (the ring-buffer
// reader). An entry the queue has no room for is dropped and counted; the
// tee's other core (stderr) has it anyway.
type Core struct {
	zapcore.LevelEnabler
	context []zapcore.Field
	state   *state
}

type entry struct {
	message  string
	priority journal.Priority
	vars     map[string]string
}

// state is shared by a core and its With() children: the queues, the
// sender and the loss accounting.
type state struct {
	send     Sender
	findings chan entry
	others   chan entry
	pending  atomic.Int64 // queued or being sent
	dropped  atomic.Uint64
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once

	mu       sync.Mutex
	lost     uint64
	down     bool
	onChange func(down bool, lost uint64, err error)
}

// NewCore returns a core sending entries at or above level, and starts its
// sender; Close stops it. onChange is called when delivery starts failing
// (down=true, with the error) and when it works again (down=false, with
// the entries lost meanwhile).
func NewCore(level zapcore.LevelEnabler, send Sender, onChange func(down bool, lost uint64, err error)) *Core {
	if send == nil {
		send = NewSocket(SocketPath, 0).Send
	}
	st := &state{
		send: send, onChange: onChange,
		findings: make(chan entry, FindingQueue), others: make(chan entry, OtherQueue),
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	go st.run()
	return &Core{LevelEnabler: level, state: st}
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

// Write implements zapcore.Core: it queues the entry. A dropped or failed
// entry is counted, never returned: the tee's other core (stderr) has it.
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
	q, message := c.state.others, e.Message
	if _, ok := enc.Fields[logkey.Finding]; ok {
		q = c.state.findings
		// A finding's MESSAGE is its headline (what journalctl lists);
		// its long line stays whole in MNTLEAK_SUMMARY.
		if h, ok := enc.Fields[logkey.Headline].(string); ok && h != "" {
			message = h
			vars[summaryField] = e.Message
		}
	}
	select {
	case <-c.state.stop:
		c.state.dropped.Add(1)
		return nil
	default:
	}
	c.state.pending.Add(1)
	select {
	case q <- entry{message, Priority(e.Level), vars}:
	default:
		c.state.pending.Add(-1)
		c.state.dropped.Add(1)
	}
	return nil
}

// Sync implements zapcore.Core: it waits, at most SyncTimeout, until the
// queued entries are sent. After Close it returns at once.
func (c *Core) Sync() error {
	deadline := time.Now().Add(SyncTimeout)
	for c.state.pending.Load() > 0 {
		select {
		case <-c.state.stop:
			return nil
		default:
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("journal: %d entries not sent after %v", c.state.pending.Load(), SyncTimeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// Close sends what is queued, waiting at most timeout, and stops the
// sender; entries logged later are dropped (stderr has them). Only the
// first call waits.
func (c *Core) Close(timeout time.Duration) error {
	first := false
	c.state.stopOnce.Do(func() { close(c.state.stop); first = true })
	if !first {
		return nil
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-c.state.done:
		return nil
	case <-t.C:
		return fmt.Errorf("journal: %d entries not sent after %v", c.state.pending.Load(), timeout)
	}
}

// Lost returns how many entries could not be sent.
func (c *Core) Lost() uint64 {
	c.state.mu.Lock()
	defer c.state.mu.Unlock()
	return c.state.lost
}

// Dropped returns how many entries found the queue full.
func (c *Core) Dropped() uint64 { return c.state.dropped.Load() }

// run sends queued entries, findings first, until stopped; then it sends
// what is left.
func (s *state) run() {
	defer close(s.done)
	for {
		var e entry
		select {
		case e = <-s.findings:
		default:
			select {
			case e = <-s.findings:
			case e = <-s.others:
			case <-s.stop:
				s.drainAll()
				return
			}
		}
		s.deliver(e)
	}
}

func (s *state) drainAll() {
	for {
		select {
		case e := <-s.findings:
			s.deliver(e)
		case e := <-s.others:
			s.deliver(e)
		default:
			return
		}
	}
}

func (s *state) deliver(e entry) {
	s.record(s.send(e.message, e.priority, e.vars))
	s.pending.Add(-1)
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
