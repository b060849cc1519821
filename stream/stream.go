package stream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/mntleak/mntleak/attribution"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// Item is one line of a stream: exactly one of Event, Proc, Attribution
// and Note is set.
type Item struct {
	Line        int
	Event       *event.Event
	Proc        *procfs.Record
	Attribution *attribution.Record
	Note        *event.MountNote
}

// NoteLine is the JSON form of a mount note line: the kernel's word that a
// mount was attached to or detached from a watched namespace, recorded
// before the event the daemon handled after reading it.
type NoteLine struct {
	Note *event.MountNote `json:"mount_note"`
}

// ProcLine is the JSON form of a /proc answer line.
type ProcLine struct {
	Proc *procfs.Record `json:"proc"`
}

// AttributionLine is the JSON form of an attribution line: what a
// container runtime answered about a finding's processes (package enrich).
type AttributionLine struct {
	Attribution *attribution.Record `json:"attribution"`
}

// MaxLine bounds one line (a full process list of a large node fits).
const MaxLine = 64 << 20

// TruncatedError is a last line that is not whole JSON and has no newline: a
// recording cut short (the daemon killed mid-write, a disk filled). Every
// line before it was read.
type TruncatedError struct {
	Name string
	Line int
	Err  error
}

func (e *TruncatedError) Error() string {
	return fmt.Sprintf("%s:%d: last line truncated (%v); the %d lines before it were read", e.Name, e.Line, e.Err, e.Line-1)
}

func (e *TruncatedError) Unwrap() error { return e.Err }

// Read calls fn for every line of r in order. name prefixes errors, which
// read "name:line: reason". A last line that is not whole JSON and does not
// end in a newline is a *TruncatedError, returned after fn has seen every
// line before it.
func Read(r io.Reader, name string, fn func(Item) error) error {
	tail := &lastByte{r: r}
	sc := bufio.NewScanner(tail)
	sc.Buffer(make([]byte, 64<<10), MaxLine)
	line := 0
	for sc.Scan() {
		line++
		b := bytes.TrimSpace(sc.Bytes())
		if len(b) == 0 {
			continue
		}
		item, err := parse(b)
		if err != nil {
			var syntax *json.SyntaxError
			if errors.As(err, &syntax) && !sc.Scan() && sc.Err() == nil && tail.last != '\n' {
				return &TruncatedError{Name: name, Line: line, Err: err}
			}
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
		item.Line = line
		if err := fn(item); err != nil {
			return fmt.Errorf("%s:%d: %w", name, line, err)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("%s:%d: line longer than %d bytes", name, line+1, MaxLine)
		}
		return fmt.Errorf("%s:%d: %w", name, line+1, err)
	}
	return nil
}

func parse(b []byte) (Item, error) {
	if b[0] != '{' {
		return Item{}, errors.New("not a JSON object")
	}
	var probe struct {
		Proc        json.RawMessage `json:"proc"`
		Attribution json.RawMessage `json:"attribution"`
		Note        json.RawMessage `json:"mount_note"`
		Kind        *string         `json:"kind"`
	}
	if err := json.Unmarshal(b, &probe); err != nil {
		return Item{}, fmt.Errorf("invalid JSON: %w", err)
	}
	switch {
	case probe.Proc != nil:
		var pl ProcLine
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&pl); err != nil {
			return Item{}, fmt.Errorf("invalid proc record: %w", err)
		}
		if pl.Proc == nil {
			return Item{}, errors.New("empty proc record")
		}
		switch pl.Proc.Op {
		case procfs.OpProcesses, procfs.OpMountinfo, procfs.OpPins, procfs.OpBlockDevice, procfs.OpHostNS, procfs.OpCommand,
			procfs.OpRealPath, procfs.OpNSMountinfo, procfs.OpMntNSID, procfs.OpNSFDs, procfs.OpMountNamespaces, procfs.OpNSTable:
		default:
			return Item{}, fmt.Errorf("proc record with unknown op %q", pl.Proc.Op)
		}
		return Item{Proc: pl.Proc}, nil
	case probe.Attribution != nil:
		var al AttributionLine
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&al); err != nil {
			return Item{}, fmt.Errorf("invalid attribution record: %w", err)
		}
		if al.Attribution == nil || !al.Attribution.Valid() {
			return Item{}, errors.New("attribution record without a known op")
		}
		return Item{Attribution: al.Attribution}, nil
	case probe.Note != nil:
		var nl NoteLine
		dec := json.NewDecoder(bytes.NewReader(b))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&nl); err != nil {
			return Item{}, fmt.Errorf("invalid mount note: %w", err)
		}
		switch {
		case nl.Note == nil:
			return Item{}, errors.New("mount note without a mount")
		case nl.Note.Watch == "" && nl.Note.Mount == nil:
			return Item{}, errors.New("mount note without a mount")
		case nl.Note.Watch != "" && nl.Note.Mount != nil:
			return Item{}, errors.New("mount note with both a mount and a watch")
		case nl.Note.Watch != "" && nl.Note.Watch != event.WatchOn && nl.Note.Watch != event.WatchOff:
			return Item{}, fmt.Errorf("mount note: watch %q, want %q or %q", nl.Note.Watch, event.WatchOn, event.WatchOff)
		}
		return Item{Note: nl.Note}, nil
	case probe.Kind != nil:
		var ev event.Event
		if err := json.Unmarshal(b, &ev); err != nil {
			return Item{}, fmt.Errorf("invalid event: %w", err)
		}
		return Item{Event: &ev}, nil
	}
	return Item{}, errors.New(`neither an event (no "kind") nor a proc record`)
}

// lastByte remembers the last byte read through it.
type lastByte struct {
	r    io.Reader
	last byte
}

func (l *lastByte) Read(p []byte) (int, error) {
	n, err := l.r.Read(p)
	if n > 0 {
		l.last = p[n-1]
	}
	return n, err
}
