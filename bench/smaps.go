package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// memoryParts is where a process's resident pages are, from
// /proc/PID/smaps: the pages of its executable, of BPF maps it mapped (the
// ring buffer: its data area is mapped twice, and a page is resident once
// the reader has read a record on it), anonymous memory (the Go heap,
// stacks) and the rest (libc, the vDSO).
type memoryParts struct {
	Binary, BPFMaps, Anon, Other int64 // bytes
}

func (p memoryParts) String() string {
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	return fmt.Sprintf("binary %.1f MiB, BPF maps %.1f MiB, anonymous %.1f MiB, other %.1f MiB",
		mib(p.Binary), mib(p.BPFMaps), mib(p.Anon), mib(p.Other))
}

// memoryPartsOf sums the Rss lines of /proc/PID/smaps by mapping.
func memoryPartsOf(pid int) (memoryParts, error) {
	var p memoryParts
	exe, err := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe")
	if err != nil {
		return p, fmt.Errorf("memory parts of pid %d: %w", pid, err)
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/smaps")
	if err != nil {
		return p, fmt.Errorf("memory parts of pid %d: %w", pid, err)
	}
	part := &p.Other
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 0 {
			continue
		}
		if strings.Contains(f[0], "-") && len(f) >= 5 {
			// A mapping's header: range, perms, offset, dev, inode, name.
			name := ""
			if len(f) >= 6 {
				name = strings.Join(f[5:], " ")
			}
			switch {
			case name == exe:
				part = &p.Binary
			case strings.HasPrefix(name, "anon_inode:bpf"):
				part = &p.BPFMaps
			case name == "" || name == "[heap]" || name == "[stack]":
				part = &p.Anon
			default:
				part = &p.Other
			}
			continue
		}
		if f[0] == "Rss:" && len(f) >= 2 {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			if err != nil {
				return p, fmt.Errorf("memory parts of pid %d: Rss %q: %w", pid, f[1], err)
			}
			*part += kb << 10
		}
	}
	return p, sc.Err()
}
