package procfs

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// TestHostWhileProcessesExit reads the live /proc while processes are
// started and exit underneath: entries vanish between the listing and the
// read of their files. Nothing may fail as a whole, and a read that fails
// must be about a process that is gone, never a wrong answer. A table of
// another namespace than listed is right only when the pid now names
// another process (its start time moved: pid_max is 32768 here and the
// other packages' tests go through pids fast).
func TestHostWhileProcessesExit(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	for range 2 { // processes that live a few milliseconds each
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				_ = exec.Command("sleep", "0.005").Run()
			}
		}()
	}
	defer wg.Wait()
	defer cancel()

	h := Host{}
	cwd, _ := os.Getwd()
	var st unix.Stat_t
	if err := unix.Stat(cwd, &st); err != nil {
		t.Fatal(err)
	}
	cwdDev := event.MakeDev(unix.Major(st.Dev), unix.Minor(st.Dev))
	reads, gone, reused := 0, 0, 0
	for ctx.Err() == nil {
		procs, err := h.Processes()
		if err != nil {
			t.Fatalf("Processes while processes exit: %v", err)
		}
		self := false
		for _, p := range procs {
			if p.PID == os.Getpid() {
				self = true
				if st := startTime(p.PID); st == 0 || st != p.StartTime {
					t.Fatalf("this process's start time: listed %d, stat says %d", p.StartTime, st)
				}
			}
			if p.Comm != "sleep" {
				continue
			}
			reads++
			ns, _, err := h.Mountinfo(p.PID)
			switch {
			case err == nil && ns != p.MntNS && startTime(p.PID) != p.StartTime:
				reused++
			case err == nil && ns != p.MntNS:
				t.Errorf("pid %d: mount table of %d, listed in %d", p.PID, ns, p.MntNS)
			case err != nil && !goneErr(err) && !exited(p.PID):
				t.Errorf("pid %d: %v (not an exited process)", p.PID, err)
			case err != nil:
				gone++
			}
			if _, err := h.Command(p.PID); err != nil && !goneErr(err) {
				t.Errorf("pid %d command: %v", p.PID, err)
			}
		}
		if !self {
			t.Fatal("this process is missing from the list")
		}
		if _, err := h.Pins([]event.Dev{cwdDev}); partial(err) != nil {
			t.Fatalf("Pins while processes exit: %v", err)
		}
	}
	if reads == 0 {
		t.Fatal("no short-lived process was ever listed: the test tested nothing")
	}
	t.Logf("%d reads of short-lived processes, %d found them gone, %d their pid reused", reads, gone, reused)
}

// exited reports whether process pid is gone or exiting now: a process
// in the middle of its exit refuses the read of its namespace link
// (EACCES) before its /proc directory goes.
func exited(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return true
	}
	i := strings.LastIndexByte(string(b), ')')
	return i < 0 || i+2 >= len(b) || b[i+2] == 'Z' || b[i+2] == 'X'
}

// startTime is field 22 of /proc/PID/stat (clock ticks after boot), 0 for
// a pid that names no process; read here apart from the code under test.
func startTime(pid int) uint64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	i := strings.LastIndexByte(string(b), ')')
	if i < 0 {
		return 0
	}
	f := strings.Fields(string(b[i+1:])) // from field 3, the state
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// goneErr: the error of a file read for a process that exited (or whose
// pid moved on).
func goneErr(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) ||
		strings.Contains(err.Error(), "changed mount namespace")
}
