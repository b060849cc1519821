package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// Machine describes where a run happened.
type Machine struct {
	Kernel, CPU, Go, Bpftrace, Docker string
	Commit                            string // of the tree the benchmark ran in
	Cores                             int
	MemoryMiB                         int64
	// LoadStart, LoadEnd: /proc/loadavg's 1, 5 and 15 minute figures when
	// the run began and ended (the machine is shared: what else ran).
	LoadStart, LoadEnd string
}

// LoadAverage is /proc/loadavg's first three fields, or "?".
func LoadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if f := strings.Fields(string(b)); err == nil && len(f) >= 3 {
		return strings.Join(f[:3], " ")
	}
	return "?"
}

// DescribeMachine reads the kernel, CPU, memory and tool versions.
func DescribeMachine(ctx context.Context) Machine {
	m := Machine{Go: runtime.Version(), Cores: runtime.NumCPU(), LoadStart: LoadAverage()}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		m.Kernel = unix.ByteSliceToString(u.Sysname[:]) + " " + unix.ByteSliceToString(u.Release[:]) + " " + unix.ByteSliceToString(u.Machine[:])
	}
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	var si unix.Sysinfo_t
	if unix.Sysinfo(&si) == nil {
		m.MemoryMiB = int64(si.Totalram) * int64(si.Unit) >> 20
	}
	m.Bpftrace = firstLine(ctx, "bpftrace", "--version")
	m.Docker = firstLine(ctx, "dockerd", "--version")
	m.Commit = firstLine(ctx, "git", "describe", "--always", "--dirty")
	return m
}

// firstLine runs a command and returns the first line it printed, or
// "not installed".
func firstLine(ctx context.Context, name string, args ...string) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, name, args...).Output()
	if err != nil {
		return "not installed"
	}
	line, _, _ := strings.Cut(strings.TrimSpace(string(out)), "\n")
	return line
}

// Line is the one-line description printed with the results.
func (m Machine) Line() string {
	return fmt.Sprintf("%s; %s, %d cores; %d MiB; %s; %s; %s; mntleak at %s; load average %s",
		m.Kernel, m.CPU, m.Cores, m.MemoryMiB, m.Go, m.Bpftrace, m.Docker, m.Commit, m.loads())
}

// loads is the load average at the start and, once the run ended, at its
// end.
func (m Machine) loads() string {
	if m.LoadEnd == "" {
		return m.LoadStart
	}
	return m.LoadStart + " at the start, " + m.LoadEnd + " at the end"
}
