package nsthread_test

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/internal/nsthread"
)

// envChild makes the test binary, re-executed, run enter on the mount
// namespace file it names from its main goroutine with GOMAXPROCS=1,
// print the report, and exit.
const envChild = "MNTLEAK_TEST_NSTHREAD_CHILD"

func TestMain(m *testing.M) {
	if file := os.Getenv(envChild); file != "" {
		runtime.GOMAXPROCS(1)
		r, err := enter(file)
		if err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(r)
		os.Exit(0)
	}
	os.Exit(privtest.Main(m))
}

// report is what one Run that entered a namespace left behind.
type report struct {
	Before, After uint64 // the process's (its main thread's) mount namespace
	Entered       uint64 // the function's thread's, after its setns
	OnMain        bool   // the function ran on the main thread
	Gone          bool   // the function's thread ended within a second
}

func (r report) String() string {
	return fmt.Sprintf("%d %d %d %t %t", r.Before, r.After, r.Entered, r.OnMain, r.Gone)
}

func parseReport(s string) (report, error) {
	var r report
	_, err := fmt.Sscanf(strings.TrimSpace(s), "%d %d %d %t %t", &r.Before, &r.After, &r.Entered, &r.OnMain, &r.Gone)
	return r, err
}

func mntNS(path string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", path, err)
	}
	return st.Ino, nil
}

// enter runs, through Run, a function that enters the mount namespace of
// file, and reports where everything is afterwards.
func enter(file string) (report, error) {
	var r report
	var err error
	if r.Before, err = mntNS("/proc/self/ns/mnt"); err != nil {
		return r, err
	}
	var tid int
	err = nsthread.Run(func() error {
		tid = unix.Gettid()
		r.OnMain = tid == unix.Getpid()
		fd, err := unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("open %s: %w", file, err)
		}
		defer unix.Close(fd)
		if err := unix.Unshare(unix.CLONE_FS); err != nil {
			return fmt.Errorf("unshare CLONE_FS: %w", err)
		}
		if err := unix.Setns(fd, unix.CLONE_NEWNS); err != nil {
			return fmt.Errorf("setns %s: %w", file, err)
		}
		r.Entered, err = mntNS("/proc/thread-self/ns/mnt")
		return err
	})
	if err != nil {
		return r, err
	}
	if r.After, err = mntNS("/proc/self/ns/mnt"); err != nil {
		return r, err
	}
	r.Gone = privtest.Poll(time.Second, func() bool {
		_, err := os.Stat("/proc/self/task/" + strconv.Itoa(tid))
		return os.IsNotExist(err)
	})
	return r, nil
}

// TestRun enters another mount namespace through Run, from a test's
// goroutine and from the main goroutine of a process with one P (where
// the function's goroutine is scheduled on the main thread unless Run
// keeps it off): the function runs in the namespace on a thread that is
// not the main thread and ends, and the process stays where it was.
func TestRun(t *testing.T) {
	privtest.Require(t)
	h := privtest.StartHolder(t, "private", "true")
	file := "/proc/" + strconv.Itoa(h.PID) + "/ns/mnt"
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		run  func(t *testing.T) report
	}{
		{"a test goroutine", func(t *testing.T) report {
			r, err := enter(file)
			if err != nil {
				t.Fatal(err)
			}
			return r
		}},
		{"the main goroutine, GOMAXPROCS=1", func(t *testing.T) report {
			cmd := exec.Command(self, "-test.run=^$")
			cmd.Env = append(os.Environ(), envChild+"="+file)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("child: %v\n%s", err, out)
			}
			r, err := parseReport(string(out))
			if err != nil {
				t.Fatalf("child said %q: %v", out, err)
			}
			return r
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := tc.run(t)
			if r.Entered != uint64(h.MntNS) {
				t.Errorf("the function's thread is in mnt:[%d] after its setns, want mnt:[%d]", r.Entered, h.MntNS)
			}
			if r.OnMain {
				t.Error("the function ran on the main thread")
			}
			if r.After != r.Before {
				t.Errorf("the process is in mnt:[%d] afterwards, was in mnt:[%d]", r.After, r.Before)
			}
			if !r.Gone {
				t.Error("the function's thread did not end")
			}
		})
	}
}

// TestThreadNamed: the function runs on a thread named ThreadName, which
// the tests' oracle tells from a member of the namespace it entered; the
// process keeps its own name.
func TestThreadNamed(t *testing.T) {
	var comm string
	err := nsthread.Run(func() error {
		b, err := os.ReadFile("/proc/self/task/" + strconv.Itoa(unix.Gettid()) + "/comm")
		comm = strings.TrimSpace(string(b))
		return err
	})
	if err != nil || comm != nsthread.ThreadName {
		t.Fatalf("the thread is named %q (%v), want %q", comm, err, nsthread.ThreadName)
	}
	b, err := os.ReadFile("/proc/self/comm")
	if err != nil || strings.TrimSpace(string(b)) == nsthread.ThreadName {
		t.Errorf("the process's name is %q (%v), want its own", b, err)
	}
}
