package bench

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// clkTck is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100 on
// every Linux architecture the daemon is built for.
const clkTck = 100

// cpuTime returns the user plus system CPU time a process has used so far.
func cpuTime(pid int) (time.Duration, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, fmt.Errorf("cpu time of pid %d: %w", pid, err)
	}
	// The comm field may hold spaces and parentheses: fields count from
	// the last ')'.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("cpu time of pid %d: no comm in stat", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	if len(f) < 13 {
		return 0, fmt.Errorf("cpu time of pid %d: short stat", pid)
	}
	// utime and stime are fields 14 and 15; f[0] is field 3.
	ut, err1 := strconv.ParseUint(f[11], 10, 64)
	st, err2 := strconv.ParseUint(f[12], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("cpu time of pid %d: bad utime/stime", pid)
	}
	return time.Duration(ut+st) * time.Second / clkTck, nil
}

// memory is a process's resident set now and at its peak.
type memory struct {
	RSS, HWM int64 // bytes
}

// memoryOf reads VmRSS and VmHWM from /proc/PID/status.
func memoryOf(pid int) (memory, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return memory{}, fmt.Errorf("memory of pid %d: %w", pid, err)
	}
	var m memory
	for _, line := range strings.Split(string(b), "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		var dst *int64
		switch k {
		case "VmRSS":
			dst = &m.RSS
		case "VmHWM":
			dst = &m.HWM
		default:
			continue
		}
		kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		if err != nil {
			return m, fmt.Errorf("memory of pid %d: %s: %w", pid, k, err)
		}
		*dst = kb << 10
	}
	return m, nil
}

// cpuMeter measures the share of one core a process uses over an interval.
type cpuMeter struct {
	pid   int
	cpu0  time.Duration
	wall0 time.Time
}

func startCPU(pid int) (*cpuMeter, error) {
	c, err := cpuTime(pid)
	if err != nil {
		return nil, err
	}
	return &cpuMeter{pid: pid, cpu0: c, wall0: time.Now()}, nil
}

// share returns CPU used / wall time since start (1.0 = one core), and the
// CPU time itself.
func (m *cpuMeter) share() (float64, time.Duration, error) {
	c, err := cpuTime(m.pid)
	if err != nil {
		return 0, 0, err
	}
	used := c - m.cpu0
	return used.Seconds() / time.Since(m.wall0).Seconds(), used, nil
}
