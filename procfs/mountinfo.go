package procfs

import (
	"bytes"
	"fmt"
	"strconv"
	"unique"
)

// The startup snapshot reads one mount table per namespace: 96,000 lines
// on a node of 300 namespaces of 300 mounts. mountinfo.GetMountsFromReader
// makes a string of every line and a slice of its fields, and the strings
// were then interned: all of it garbage the moment the table was stored,
// tens of megabytes the runtime kept as resident heap after the start.
// parseMountinfo reads the same tables into the same entries with one
// allocation per entry: its strings are looked up in an interner by their
// bytes (a lookup with a []byte key does not allocate) and made only the
// first time one is seen, and so is its shape (Mount: all but the ids),
// which the copies of one mount in the tables one parser reads share.

// interner maps a string to its canonical copy (unique.Make's), for the
// tables one reader parses. It is a reader's own (a scan worker's scratch),
// never shared between goroutines.
type interner map[string]string

// of returns the canonical copy of the string b holds.
func (in interner) of(b []byte) string {
	if s, ok := in[string(b)]; ok {
		return s
	}
	s := unique.Make(string(b)).Value()
	in[s] = s
	return s
}

// mountinfoParser is one reader's scratch space for parsing tables.
type mountinfoParser struct {
	names  interner
	shapes shapes
	fields [][]byte
	path   []byte // an unescaped path
}

func newMountinfoParser() *mountinfoParser {
	return &mountinfoParser{names: interner{}}
}

// parse reads a mount table as mountinfo.GetMountsFromReader(r, nil)
// would, entry for entry and field for field (a line as bufio.ScanLines
// cuts it), with every string and every shape interned.
func (p *mountinfoParser) parse(table []byte) ([]*Mount, error) {
	out := make([]*Mount, 0, bytes.Count(table, []byte{'\n'})+1)
	for len(table) > 0 {
		line := table
		if i := bytes.IndexByte(table, '\n'); i >= 0 {
			line, table = table[:i], table[i+1:]
		} else {
			table = nil
		}
		line = bytes.TrimSuffix(line, []byte{'\r'})
		m, err := p.entry(line)
		if err != nil {
			return nil, err
		}
		out = append(out, m)
	}
	return out, nil
}

// entry parses one line (see proc(5)):
//
//	36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue
func (p *mountinfoParser) entry(line []byte) (*Mount, error) {
	f := p.fields[:0]
	for rest := line; ; {
		i := bytes.IndexByte(rest, ' ')
		if i < 0 {
			f = append(f, rest)
			break
		}
		f = append(f, rest[:i])
		rest = rest[i+1:]
	}
	p.fields = f
	if len(f) < 10 {
		return nil, fmt.Errorf("parsing '%s' failed: not enough fields (%d)", line, len(f))
	}
	// The separator: searched from the end, as the kernels whose cifs
	// source could hold a space wrote it.
	sep := len(f) - 4
	for string(f[sep]) != "-" {
		sep--
		if sep == 5 {
			return nil, fmt.Errorf("parsing '%s' failed: missing - separator", line)
		}
	}
	var m MountShape
	var err error
	if m.Mountpoint, err = p.unescaped(f[4]); err != nil {
		return nil, fmt.Errorf("parsing '%s' failed: mount point: %w", f[4], err)
	}
	if m.FSType, err = p.unescaped(f[sep+1]); err != nil {
		return nil, fmt.Errorf("parsing '%s' failed: fstype: %w", f[sep+1], err)
	}
	if m.Source, err = p.unescaped(f[sep+2]); err != nil {
		return nil, fmt.Errorf("parsing '%s' failed: source: %w", f[sep+2], err)
	}
	m.VFSOptions = p.names.of(f[sep+3])
	// As GetMountsFromReader: a number that does not parse is 0.
	id, _ := strconv.Atoi(string(f[0]))
	parent, _ := strconv.Atoi(string(f[1]))
	major, minor, ok := bytes.Cut(f[2], []byte{':'})
	if !ok || bytes.IndexByte(minor, ':') >= 0 {
		return nil, fmt.Errorf("parsing '%s' failed: unexpected major:minor pair %s", line, f[2])
	}
	m.Major, _ = strconv.Atoi(string(major))
	m.Minor, _ = strconv.Atoi(string(minor))
	if m.Root, err = p.unescaped(f[3]); err != nil {
		return nil, fmt.Errorf("parsing '%s' failed: root: %w", f[3], err)
	}
	m.Options = p.names.of(f[5])
	// The optional fields joined by single spaces are the line's bytes
	// from the first of them to the separator.
	start, end := 0, 0
	for i := range sep {
		if i == 6 {
			start = end
		}
		end += len(f[i]) + 1
	}
	if sep > 6 {
		m.Optional = p.names.of(line[start : end-1])
	}
	return p.shapes.mount(id, parent, m), nil
}

// unescaped is a path field (root, mount point, source, type) with its
// octal escapes (\040 for a space, \011, \012, \134) decoded, interned,
// as mountinfo's own unescape decodes them (its errors included).
func (p *mountinfoParser) unescaped(b []byte) (string, error) {
	if bytes.IndexByte(b, '\\') < 0 {
		return p.names.of(b), nil
	}
	out := p.path[:0]
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' {
			out = append(out, b[i])
			continue
		}
		s := b[i:]
		if len(s) < 4 {
			return "", fmt.Errorf("bad escape sequence %q: too short", s)
		}
		if s[1] < '0' || s[1] > '7' {
			return "", fmt.Errorf("bad escape sequence %q: not a digit", s[:3])
		}
		v := s[1] - '0'
		for j := 2; j < 4; j++ {
			if s[j] < '0' || s[j] > '7' {
				return "", fmt.Errorf("bad escape sequence %q: not a digit", s[:3])
			}
			v = v<<3 | (s[j] - '0')
		}
		out = append(out, v)
		i += 3
	}
	p.path = out
	return p.names.of(out), nil
}
