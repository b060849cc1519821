package oracle

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// readMountinfo parses a /proc/PID/mountinfo (the fallback for kernels
// without listmount/statmount): old ids only.
func readMountinfo(path string) ([]Mount, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Mount
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		m, err := parseMountinfoLine(sc.Text())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, m)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return out, nil
}

// parseMountinfoLine reads "id parent maj:min root point opts [tags] - fstype source superopts".
func parseMountinfoLine(line string) (Mount, error) {
	pre, post, ok := strings.Cut(line, " - ")
	f, g := strings.Fields(pre), strings.Fields(post)
	if !ok || len(f) < 6 || len(g) < 2 {
		return Mount{}, fmt.Errorf("bad mountinfo line %q", line)
	}
	id, err1 := strconv.ParseUint(f[0], 10, 32)
	maj, min, ok := strings.Cut(f[2], ":")
	ma, err2 := strconv.ParseUint(maj, 10, 32)
	mi, err3 := strconv.ParseUint(min, 10, 32)
	if err1 != nil || err2 != nil || err3 != nil || !ok {
		return Mount{}, fmt.Errorf("bad mountinfo line %q", line)
	}
	return Mount{OldID: uint32(id), Major: uint32(ma), Minor: uint32(mi), Root: unescape(f[3]),
		Point: unescape(f[4]), FSType: g[0], Source: unescape(g[1])}, nil
}

// unescape undoes mountinfo's octal escapes (\040 for a space).
func unescape(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+4 <= len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
