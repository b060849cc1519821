package bench

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// Config sizes a run.
type Config struct {
	Mntleak string // the mntleak binary
	WorkDir string // scratch space; removed at the end ("" = a temp dir)
	Out     io.Writer
	Skip    map[string]bool // sections not to run, by name
	// Rounds per variant of the interleaved workloads.
	Rounds     int
	NullOps    int // getppid calls per thread per round
	ChurnFiles int
	// SpawnProcesses are the processes started per round of the process
	// churn.
	SpawnProcesses int
	StormThreads   int
	StormTime      time.Duration
	// StormBaseline is the length of the no-tracer storm rounds that give
	// the syscall rate without tracing (0: none).
	StormBaseline time.Duration
	// StormRingBufSizes are ring buffer sizes (--ringbuf-size) to run the
	// storm again with, one storm each, after the default's.
	StormRingBufSizes []int
	// StormPremounts are numbers of mounts to run the storm again among,
	// one storm each: binds made in its namespace before it.
	StormPremounts  []int
	DockerRounds    int
	Containers      int // docker run/rm per round
	Processes       int // sleeping processes present for latency/startup/why
	Namespaces      int // mount namespaces present
	MountsPerNS     int // mounts in each namespace for the memory figure
	LatencyTrials   int
	CommandRepeats  int // runs of why/audit
	StartupRepeats  int
	NoBpftrace      bool
	Quick           bool
	CommandLine     string // printed with the results
	MarkdownOut     string // where the report goes in Markdown ("" = none)
	ReportTitleNote string
}

// Full is the configuration of `make bench`.
func Full() Config {
	return Config{
		Rounds: 11, NullOps: 2_000_000, ChurnFiles: 200_000, SpawnProcesses: 2000,
		StormThreads: 2, StormTime: 60 * time.Second, StormBaseline: 10 * time.Second,
		DockerRounds: 3, Containers: 20,
		Processes: 2000, Namespaces: 300, MountsPerNS: 300,
		LatencyTrials: 100, CommandRepeats: 5, StartupRepeats: 5,
	}
}

// Quick is the reduced configuration of `make bench-quick`.
func Quick() Config {
	return Config{
		Quick:  true,
		Rounds: 3, NullOps: 1_000_000, ChurnFiles: 50_000, SpawnProcesses: 500,
		StormThreads: 2, StormTime: 10 * time.Second,
		DockerRounds: 1, Containers: 6,
		Processes: 500, Namespaces: 60, MountsPerNS: 60,
		LatencyTrials: 40, CommandRepeats: 3, StartupRepeats: 2,
	}
}

// Runner runs the workloads of one benchmark run.
type Runner struct {
	cfg Config
	dir string
	out io.Writer
	log *os.File // progress and child output, in the work dir
	// running is the variant interleave is measuring under now.
	running tracer
}

// NewRunner prepares the scratch directory.
func NewRunner(cfg Config) (*Runner, error) {
	dir := cfg.WorkDir
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "mntleak-bench-"); err != nil {
			return nil, err
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	if cfg.Out == nil {
		cfg.Out = os.Stdout
	}
	f, err := os.Create(filepath.Join(dir, "bench.log"))
	if err != nil {
		return nil, fmt.Errorf("bench log in %s: %w", dir, err)
	}
	return &Runner{cfg: cfg, dir: dir, out: cfg.Out, log: f}, nil
}

// Close removes the scratch directory (the workloads unmounted theirs).
func (r *Runner) Close() error {
	r.log.Close()
	if r.cfg.WorkDir != "" {
		return nil // the caller's directory: kept, with its logs
	}
	return os.RemoveAll(r.dir)
}

func (r *Runner) logf(format string, args ...any) {
	line := fmt.Sprintf(time.Now().Format("15:04:05 ")+format+"\n", args...)
	_, _ = io.WriteString(r.out, line)
	_, _ = io.WriteString(r.log, line)
}

func (r *Runner) logWriter() io.Writer { return r.log }

func (r *Runner) logPath(name string) string { return filepath.Join(r.dir, name) }

// variants is what the interleaved workloads compare.
func (r *Runner) variants() []Variant {
	vs := []Variant{NoTracer, Floor, Mntleak}
	if !r.cfg.NoBpftrace {
		vs = append(vs, Bpftrace)
	}
	return vs
}

// mountNS returns the mount namespace inode of pid.
func mountNS(pid int) (uint32, error) {
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(pid)+"/ns/mnt", &st); err != nil {
		return 0, fmt.Errorf("mount namespace of pid %d: %w", pid, err)
	}
	return uint32(st.Ino), nil
}
