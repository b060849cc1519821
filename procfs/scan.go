package procfs

import (
	"errors"
	"os"
	"runtime"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// The /proc scans (every process, every process's pins) are what a
// failure waits for before its finding: on a node with thousands of
// processes they dominate the failure-to-finding latency. They read each
// file with one open/read/close into a reused buffer (no os.File, no
// fstat, no allocation per file) and spread the processes over a few
// goroutines; results keep /proc's order, so nothing downstream changes.

// maxScanners bounds the goroutines of one scan: /proc reads scale with
// cores until the kernel's locks (tasklist, mmap) are the limit.
const maxScanners = 4

// minParallel is the number of processes below which one goroutine is
// faster than several.
const minParallel = 64

// scratch is one scanner's reusable buffers.
type scratch struct {
	buf    []byte
	link   []byte
	parser *mountinfoParser // made by the first table read
}

// tables is the scratch's mount table parser.
func (s *scratch) tables() *mountinfoParser {
	if s.parser == nil {
		s.parser = newMountinfoParser()
	}
	return s.parser
}

func newScratch() *scratch {
	return &scratch{buf: make([]byte, 4096), link: make([]byte, 256)}
}

// scan calls fn(i, s) for every i in [0, n) on up to maxScanners
// goroutines, each with scratch buffers of its own.
func scan(n int, fn func(i int, s *scratch)) {
	workers := min(runtime.GOMAXPROCS(0), maxScanners)
	if n < minParallel || workers < 2 {
		s := newScratch()
		for i := range n {
			fn(i, s)
		}
		return
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := newScratch()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				fn(i, s)
			}
		}()
	}
	wg.Wait()
}

// collect is scan for searches that find things in each process: fn
// returns what it found in process i and whether that process's files
// could not be read. The finds come in the order of i; the unreadable
// processes are counted in an *UnreadableError that comes with them.
func collect[T any](n int, fn func(i int, s *scratch) (found []T, denied bool)) ([]T, error) {
	per := make([][]T, n)
	denied := make([]bool, n)
	scan(n, func(i int, s *scratch) { per[i], denied[i] = fn(i, s) })
	var out []T
	unreadable := 0
	for i := range n {
		out = append(out, per[i]...)
		if denied[i] {
			unreadable++
		}
	}
	if unreadable > 0 {
		return out, &UnreadableError{Processes: unreadable}
	}
	return out, nil
}

// read reads a whole (small, /proc) file into s.buf, growing it as
// needed, and returns the bytes read; they are valid until the next read.
func (s *scratch) read(path string) ([]byte, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
	defer unix.Close(fd)
	n := 0
	for {
		if n == len(s.buf) {
			s.buf = append(s.buf, make([]byte, len(s.buf))...)
		}
		m, err := unix.Read(fd, s.buf[n:])
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return nil, &os.PathError{Op: "read", Path: path, Err: err}
		}
		if m == 0 {
			return s.buf[:n], nil
		}
		n += m
	}
}

// readlink reads a symbolic link (a /proc magic link) into s.link.
func (s *scratch) readlink(path string) (string, error) {
	for {
		n, err := unix.Readlink(path, s.link)
		if err != nil {
			return "", &os.PathError{Op: "readlink", Path: path, Err: err}
		}
		if n < len(s.link) {
			return string(s.link[:n]), nil
		}
		s.link = make([]byte, 2*len(s.link))
	}
}

// pids lists the numeric entries of the proc root in the order os.ReadDir
// gives (by name), which the serial scans had.
func (h Host) pids() ([]int, error) {
	f, err := os.Open(h.root())
	if err != nil {
		return nil, err
	}
	defer f.Close()
	names, err := f.Readdirnames(-1)
	if err != nil {
		return nil, err
	}
	sort.Strings(names)
	pids := make([]int, 0, len(names))
	for _, name := range names {
		if pid, err := strconv.Atoi(name); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids, nil
}
