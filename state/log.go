package state

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/mntleak/mntleak/event"
)

// DefaultMaxBytes is the size cap of the whole log.
const DefaultMaxBytes = 64 << 20

const segmentPrefix, segmentSuffix = "lineage-", ".jsonl"

// header is a segment's first line.
type header struct {
	Mntleak int    `json:"mntleak_lineage"` // format version
	BootID  string `json:"boot_id"`
}

// Keep reports whether an event belongs in the persistent lineage: what a
// later verdict may need to cite. Exits and failures are not kept (they are
// reconciled from /proc, and explained when they happen).
func Keep(ev *event.Event) bool {
	switch ev.Kind {
	case event.KindUnshare, event.KindSetns, event.KindNewNSFork:
		return ev.Ret >= 0
	case event.KindMount, event.KindUmount, event.KindPivotRoot, event.KindOpenTree,
		event.KindMoveMount, event.KindMountSetattr, event.KindFsmount:
		return ev.Ret >= 0
	}
	return false
}

// Log appends to the segments in a directory.
type Log struct {
	dir      string
	bootID   string
	maxBytes int64

	mu      sync.Mutex
	f       *os.File
	w       *bufio.Writer
	seq     int
	written int64
	closed  bool
}

// Open opens (creating it 0700) the directory for appending; a new segment
// is started, never appended to an old one that may end mid-line.
func Open(dir, bootID string, maxBytes int64) (*Log, error) {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxBytes
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	segs, err := segments(dir)
	if err != nil {
		return nil, err
	}
	l := &Log{dir: dir, bootID: bootID, maxBytes: maxBytes}
	// After every name taken, even by something that is not a segment (a
	// directory in the way): O_EXCL would fail on it.
	for _, s := range segs {
		l.seq = max(l.seq, s.seq)
	}
	if err := l.rotate(); err != nil {
		return nil, err
	}
	return l, nil
}

// Append writes one event. Writes are buffered; Flush or Close persist them.
func (l *Log) Append(ev *event.Event) error {
	b, err := json.Marshal(ev)
	if err != nil {
		return err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return errors.New("state log closed")
	}
	if l.written+int64(len(b))+1 > l.maxBytes/4 {
		if err := l.rotate(); err != nil {
			return err
		}
	}
	l.w.Write(b)
	l.w.WriteByte('\n')
	l.written += int64(len(b)) + 1
	return nil
}

// Flush writes out buffered events.
func (l *Log) Flush() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	return l.w.Flush()
}

// Close flushes and closes the current segment; it is idempotent.
func (l *Log) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return nil
	}
	l.closed = true
	err := l.w.Flush()
	if cerr := l.f.Close(); err == nil {
		err = cerr
	}
	return err
}

// rotate starts a new segment and drops the oldest ones over the cap.
func (l *Log) rotate() error {
	if l.f != nil {
		l.w.Flush()
		l.f.Close()
	}
	l.seq++
	path := filepath.Join(l.dir, segmentPrefix+strconv.Itoa(l.seq)+segmentSuffix)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("state segment: %w", err)
	}
	l.f, l.w, l.written = f, bufio.NewWriterSize(f, 64<<10), 0
	h, _ := json.Marshal(header{Mntleak: 1, BootID: l.bootID})
	l.w.Write(append(h, '\n'))
	return l.trim()
}

// trim removes the oldest segments while the total exceeds the cap.
func (l *Log) trim() error {
	segs, err := segments(l.dir)
	if err != nil {
		return err
	}
	segs = regular(segs)
	var total int64
	for _, s := range segs {
		total += s.size
	}
	for i := 0; i < len(segs)-1 && total > l.maxBytes; i++ {
		if err := os.Remove(segs[i].path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("state segment: %w", err)
		}
		total -= segs[i].size
	}
	return nil
}

// regular keeps the segments that are regular files.
func regular(segs []segment) []segment {
	var out []segment
	for _, s := range segs {
		if s.regular {
			out = append(out, s)
		}
	}
	return out
}

type segment struct {
	path    string
	seq     int
	size    int64
	regular bool // a directory or a FIFO by that name is never read nor removed
}

func segments(dir string) ([]segment, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	var out []segment
	for _, e := range ents {
		name := e.Name()
		if !strings.HasPrefix(name, segmentPrefix) || !strings.HasSuffix(name, segmentSuffix) {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(name, segmentPrefix), segmentSuffix))
		if err != nil {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue
		}
		out = append(out, segment{path: filepath.Join(dir, name), seq: n, size: info.Size(), regular: info.Mode().IsRegular()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].seq < out[j].seq })
	return out, nil
}

// Loaded is what Read found in a state directory.
type Loaded struct {
	Events    []*event.Event // of this boot, oldest first
	Damaged   []Damage       // one per damaged file
	OtherBoot int            // segments of another boot, skipped
}

// Damage is a file skipped, whole or in part.
type Damage struct {
	Path   string
	Reason string
}

func (d Damage) String() string { return d.Path + ": " + d.Reason }

// Load reads the events of this boot, oldest first, and the damage found
// (see Read).
func Load(dir, bootID string) (events []*event.Event, warnings []string, err error) {
	l, err := Read(dir, bootID)
	if err != nil {
		return nil, nil, err
	}
	for _, d := range l.Damaged {
		warnings = append(warnings, d.String())
	}
	return l.Events, warnings, nil
}

// Read reads a state directory. Damage is returned as warnings, one per
// damaged file naming it (a crash leaves a truncated last line; a disk
// error, garbage), never as an error, unless the directory cannot be read
// at all; a missing directory is an empty one. Segments of another boot
// are skipped and counted: after a reboot that is expected, not damage.
func Read(dir, bootID string) (*Loaded, error) {
	var (
		events    []*event.Event
		damaged   []Damage
		otherBoot int
	)
	segs, err := segments(dir)
	if errors.Is(err, os.ErrNotExist) {
		return &Loaded{}, nil
	}
	if err != nil {
		return nil, err
	}
	for _, s := range segs {
		if !s.regular {
			// A FIFO would block the read for ever.
			damaged = append(damaged, Damage{s.path, "not a regular file, skipped"})
			continue
		}
		b, err := os.ReadFile(s.path)
		if err != nil {
			damaged = append(damaged, Damage{s.path, err.Error()})
			continue
		}
		lines := bytes.Split(b, []byte{'\n'})
		var h header
		if len(lines) == 0 || json.Unmarshal(lines[0], &h) != nil || h.Mntleak != 1 {
			damaged = append(damaged, Damage{s.path, "no lineage header, segment skipped"})
			continue
		}
		if h.BootID != bootID {
			otherBoot++ // its namespaces are gone
			continue
		}
		bad, first := 0, 0
		for i, line := range lines[1:] {
			if len(bytes.TrimSpace(line)) == 0 {
				continue
			}
			var ev event.Event
			if err := json.Unmarshal(line, &ev); err != nil || !ev.Kind.Valid() {
				if bad++; bad == 1 {
					first = i + 2
				}
				continue
			}
			events = append(events, &ev)
		}
		if bad > 0 {
			damaged = append(damaged, Damage{s.path, fmt.Sprintf("%d corrupt or truncated lines skipped, the first at line %d", bad, first)})
		}
	}
	return &Loaded{Events: events, Damaged: damaged, OtherBoot: otherBoot}, nil
}

// BootID reads the kernel's boot id.
func BootID() (string, error) {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", fmt.Errorf("read boot id: %w", err)
	}
	return strings.TrimSpace(string(b)), nil
}
