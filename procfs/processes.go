package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// The process list: every process /proc shows, read in one parallel scan,
// and the kernel's threads apart from them.

// Processes implements Proc. Processes that exit while being read are
// skipped: the list is a snapshot of the ones that could be read.
func (h Host) Processes() ([]Process, error) {
	l, err := h.ProcessList()
	return l.Procs, err
}

// ProcessList implements ProcessLister: Processes, and what it leaves out
// but the processes that are gone: the kernel threads, each with its pid,
// comm, start time and mount namespace (read from the same /proc list, one
// link more each), and the processes that could not be read.
func (h Host) ProcessList() (ProcessList, error) {
	var l ProcessList
	pids, err := h.pids()
	if err != nil {
		return l, fmt.Errorf("list %s: %w", h.root(), err)
	}
	all := make([]Process, len(pids))
	what := make([]error, len(pids))
	scan(len(pids), func(i int, s *scratch) {
		all[i], what[i] = h.process(pids[i], s, !h.ListWithoutCgroups)
		if errors.Is(what[i], errKernelThread) {
			what[i] = h.kernelThread(&all[i], s)
		}
	})
	for i, p := range all {
		switch {
		case what[i] == nil:
			l.Procs = append(l.Procs, p)
		case what[i] == errKernelThread:
			l.Kernel = append(l.Kernel, p)
		case isDenied(what[i]):
			l.Unreadable = append(l.Unreadable, p.PID)
		}
		// Else gone.
	}
	return l, nil
}

// ReadProcesses implements ProcessReader: the processes of pids that are
// there and are no kernel threads, in the order of pids.
func (h Host) ReadProcesses(pids []int) ([]Process, error) {
	all := make([]Process, len(pids))
	what := make([]error, len(pids))
	scan(len(pids), func(i int, s *scratch) {
		all[i], what[i] = h.process(pids[i], s, true)
	})
	var out []Process
	for i, p := range all {
		switch {
		case what[i] == nil:
			out = append(out, p)
		case isDenied(what[i]):
			return out, fmt.Errorf("read process %d: %w", pids[i], what[i])
		}
		// Else gone, or a kernel thread.
	}
	return out, nil
}

// kernelThread reads the mount namespace of p, which process found to be
// a kernel thread, and returns errKernelThread when it could.
func (h Host) kernelThread(p *Process, s *scratch) error {
	link, err := s.readlink(h.root() + "/" + strconv.Itoa(p.PID) + "/ns/mnt")
	if err != nil {
		return err
	}
	if p.MntNS, err = ParseNSLink(link); err != nil {
		return err
	}
	return errKernelThread
}

func (h Host) process(pid int, s *scratch, cgroup bool) (Process, error) {
	dir := h.root() + "/" + strconv.Itoa(pid)
	p := Process{PID: pid}
	stat, err := s.read(dir + "/stat")
	if err != nil {
		return p, err
	}
	threads, err := parseStat(stat, &p)
	if err != nil {
		return p, fmt.Errorf("%s/stat: %w", dir, err)
	}
	link, err := s.readlink(dir + "/ns/mnt")
	if err != nil {
		return p, err
	}
	if p.MntNS, err = ParseNSLink(link); err != nil {
		return p, err
	}
	if cgroup {
		if b, err := s.read(dir + "/cgroup"); err == nil {
			p.Cgroup = pickCgroup(string(b))
		}
	}
	if threads > 1 {
		p.Threads = threadsElsewhere(dir, p.MntNS, s)
	}
	return p, nil
}

// parseStat reads comm, ppid and starttime from /proc/PID/stat, and
// returns the number of threads. The comm is in parentheses and may itself
// contain spaces and parentheses.
func parseStat(b []byte, p *Process) (int, error) {
	open, close := bytes.IndexByte(b, '('), bytes.LastIndexByte(b, ')')
	if open < 0 || close < open {
		return 0, errors.New("no comm field")
	}
	p.Comm = string(b[open+1 : close])
	fields := strings.Fields(string(b[close+1:]))
	// fields[0] is state (field 3); ppid is field 4, starttime field 22.
	if len(fields) < 20 {
		return 0, fmt.Errorf("%d fields after comm, want at least 20", len(fields))
	}
	ppid, err1 := strconv.Atoi(fields[1])
	start, err2 := strconv.ParseUint(fields[19], 10, 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("bad ppid or starttime")
	}
	p.PPID, p.StartTime = ppid, start
	if flags, err := strconv.ParseUint(fields[6], 10, 64); err == nil && flags&pfKthread != 0 {
		return 0, errKernelThread
	}
	threads, _ := strconv.Atoi(fields[17]) // num_threads, field 20
	return threads, nil
}

// pfKthread is PF_KTHREAD in the flags field of /proc/PID/stat. Kernel
// threads are not members of any namespace a user cares about, and the
// mountinfo seen through them is not the host's.
const pfKthread = 0x00200000

var errKernelThread = errors.New("kernel thread")
