package correlate_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/daemon"
	"github.com/mntleak/mntleak/e2e/oraclecheck"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
	"github.com/mntleak/mntleak/tracer"
)

// TestCausesEndToEnd builds every scenario for real (namespaces, binds,
// loop devices, pid reuse), with the real tracer and the correlator reading
// the live /proc in this process, and checks each finding: its cause, the
// event it names, and the holder pid and namespace the scenario reports.
func TestCausesEndToEnd(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "losetup", "mkfs.ext4", "mount", "umount", "bash")
	for name, want := range scenarios {
		t.Run(name, func(t *testing.T) {
			// A verdict is never run again because it was wrong. The only
			// rerun is of a run for which the tracer reported lost events
			// (another test's mount storm filled its ring buffer: the
			// verdict was built on a stream with holes), at most
			// privtest.MaxReruns times, and each is recorded: make test
			// prints them in its "reruns:" line.
			got, exp, x, lost := runScenario(t, name)
			for rerun := 0; lost > 0 && rerun < privtest.MaxReruns; rerun++ {
				privtest.Rerun(t, "correlate", lost)
				got, exp, x, lost = runScenario(t, name)
			}
			if lost > 0 {
				t.Logf("%d events lost in the last run too: its verdict is checked all the same", lost)
			}
			got = ofScenario(got, name, exp)
			checkExpectations(t, got, want, x, false)
			for i, f := range got {
				// The holder pid is what the final finding must name; an
				// earlier leak finding names the namespace.
				pid := exp["holder_pid"]
				if i < len(got)-1 {
					pid = ""
				}
				if !namesHolder(f, exp["holder_ns"], pid) {
					t.Errorf("finding %d does not name holder pid %s in mnt:[%s]: %s", i, exp["holder_pid"], exp["holder_ns"], f.Line())
				}
			}
		})
	}
}

// runScenario runs e2e/scenarios/NAME/run.sh under a live tracer and
// correlator and returns the findings, what the scenario expects, the
// facts its events recorded, and how many events the tracer lost.
func runScenario(t *testing.T, name string) ([]*finding.Finding, map[string]string, *facts, uint64) {
	t.Helper()
	sc := startScenario(t, name)
	oracle := oraclecheck.New(t) // each finding checked against the kernel's state as it arrives
	x := startTraced(t, correlate.Options{}, oracle.Witness)

	runErr := sc.run()
	out, _ := os.ReadFile(sc.out)
	cmd := sc.cmd
	exp := map[string]string{}
	b, _ := os.ReadFile(sc.expect)
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			exp[k] = v
		}
	}
	roots := []int{cmd.Process.Pid}
	if pid, err := strconv.Atoi(exp["holder_pid"]); err == nil {
		roots = append(roots, pid)
		// The facts name the holder by its events: one that made no call
		// (a sleeping service) is known by its exit, which the cleanup
		// causes and which reaches the tracer a moment later.
		waitExit(t, x, uint32(pid), 10*time.Second)
	}
	// Every event of the scenario reaches the correlator before tracing
	// stops: under load it lags the kernel by seconds (a run once ended
	// with the second mkfs.ext4's failure not read yet: "1 findings, want
	// 2", or with neither).
	waited := time.Now()
	x.marker.CaughtUp(t, 2*time.Minute)
	if lag := time.Since(waited); lag > time.Second {
		// Said, for the verdict's reader: the correlator read /proc that
		// long after the events, past the scenario's hold (MNTLEAK_HOLD).
		t.Logf("the correlator caught up %v after the scenario's end", lag.Round(time.Millisecond))
	}
	x.stop(t)
	if runErr != nil {
		t.Fatalf("scenario %s: %v\n%s", name, runErr, out)
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	for _, f := range ofScenario(x.findings, name, exp) {
		oracle.Check(t, f)
	}
	return x.findings, exp, scenarioFacts(x.events, roots...), x.lost
}

// traced is a correlator on the live /proc fed by the real tracer as the
// daemon feeds it: each event prepared by the daemon's sources, this
// process's own left out (they are the correlator's reads). It keeps the
// findings, every event the tracer delivered and how many it lost; mu
// guards them while it runs. marker.CaughtUp waits until the correlator
// has handled every event made before it.
type traced struct {
	mu       sync.Mutex
	findings []*finding.Finding
	events   []*event.Event
	lost     uint64
	marker   privtest.Marker // caughtUp's call, waited for in the stream

	corr   *correlate.Correlator
	tr     *tracer.Tracer
	cancel context.CancelFunc
	done   chan error
	ended  sync.Once
	endErr error // what ending the tracing returned
}

// startTraced starts a tracer and a correlator with opts (its startup
// snapshot taken); witness, when set, sees each finding as it is emitted.
// stop ends it.
func startTraced(t *testing.T, opts correlate.Options, witness func(*finding.Finding)) *traced {
	t.Helper()
	x := &traced{}
	x.corr = correlate.New(procfs.Host{}, opts, func(f *finding.Finding) {
		if witness != nil {
			witness(f)
		}
		x.mu.Lock()
		x.findings = append(x.findings, f)
		x.mu.Unlock()
	})
	src := daemon.NewSources(zaptest.NewLogger(t)) // prepared as the daemon prepares them
	self := uint32(os.Getpid())
	tr, err := tracer.New(tracer.Config{Sink: func(ev *event.Event) {
		x.mu.Lock()
		if ev.Kind == event.KindLost {
			x.lost += ev.Lost
		}
		x.events = append(x.events, ev)
		x.mu.Unlock()
		if ev.Kind == event.KindUmount {
			x.marker.Saw(ev.Target)
		}
		if ev.PID != self { // as the daemon: its own events are the correlator's reads
			if err := correlate.Prepare(ev, src); err != nil {
				t.Errorf("prepare: %v", err)
			}
			x.corr.Handle(ev)
		}
	}}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	x.tr = tr
	x.marker.Lost = func() uint64 {
		x.mu.Lock()
		defer x.mu.Unlock()
		return x.lost
	}
	// A test that fails before stop still ends the tracing before it
	// completes: the tracer logs to t.
	t.Cleanup(func() { _ = x.end() })
	if err := x.corr.Start(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	x.cancel, x.done = cancel, make(chan error, 1)
	go func() { x.done <- tr.Run(ctx) }()
	return x
}

// stop ends the tracing and flushes the correlator: what it held back (a
// leak still settling) is emitted.
func (x *traced) stop(t *testing.T) {
	t.Helper()
	if err := x.end(); err != nil {
		t.Fatal(err)
	}
	x.corr.Flush()
}

// end stops Run (when it was started), waits for it and closes the
// tracer, once.
func (x *traced) end() error {
	x.ended.Do(func() {
		var runErr error
		if x.done != nil { // Run was started
			x.cancel()
			runErr = <-x.done
		}
		if err := x.tr.Close(); err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("close the tracer: %w", err))
		}
		x.endErr = runErr
	})
	return x.endErr
}

// ofScenario drops findings about anything else happening on the machine
// (other tests run concurrently): a scenario's objects are under its
// directory or on its loop devices (device, device2). A finding is not the
// scenario's because it names the scenario's holder namespace: that
// namespace copies the whole host tree, so another test's mount torn down
// meanwhile (a pod's shm under the Kubernetes node's containerd) is a real
// leak in it, about an object of that test.
func ofScenario(fs []*finding.Finding, name string, exp map[string]string) []*finding.Finding {
	dir := "/var/lib/mntleak-scenarios/" + name
	var out []*finding.Finding
	for _, f := range fs {
		// Loop device numbers are reused by tests running meanwhile: a
		// finding on the device must also name the scenario's directory.
		device := f.Object.Path != "" && (f.Object.Path == exp["device"] || f.Object.Path == exp["device2"])
		others := false
		for _, o := range f.Others {
			others = others || strings.HasPrefix(o.Path, dir) || strings.HasPrefix(o.Source, dir)
		}
		if strings.HasPrefix(f.Object.Path, dir) || strings.HasPrefix(f.Object.Source, dir) || others ||
			(device && strings.Contains(f.Line(), dir)) {
			out = append(out, f)
		}
	}
	return out
}

// namesHolder: the finding's actor (holder_pid) is pid, in a holder of
// namespace ns; with no pid expected, some holder is in ns.
func namesHolder(f *finding.Finding, ns, pid string) bool {
	if pid == "" {
		for _, h := range f.Holders {
			if strconv.FormatUint(uint64(h.MntNS), 10) == ns {
				return true
			}
		}
		return false
	}
	_, a := f.Actor()
	return a != nil && strconv.Itoa(a.PID) == pid
}

// waitExit waits until the tracer has delivered the exit of process pid
// (at most limit; a holder still running then is the scenario's fault,
// which its expectations will show).
func waitExit(t *testing.T, x *traced, pid uint32, limit time.Duration) {
	t.Helper()
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		x.mu.Lock()
		for _, ev := range x.events {
			if ev.Kind == event.KindExit && ev.PID == pid {
				x.mu.Unlock()
				return
			}
		}
		x.mu.Unlock()
	}
	t.Logf("no exit of holder %d within %s of the scenario's end", pid, limit)
}

// scenarioRun is a scenario's run.sh: what it is told to expect is
// written to expect, its output to out.
type scenarioRun struct {
	cmd         *exec.Cmd
	expect, out string
	gate        string // a scenario that calls tracing_begins: started before tracing, waiting at gate (lib.sh)
}

// startScenario readies run.sh; one that makes part of its situation
// before tracing (it calls tracing_begins) is started now, and returns
// once it waits at its gate: the caller starts tracing, then run opens it.
func startScenario(t *testing.T, name string) *scenarioRun {
	t.Helper()
	dir := t.TempDir()
	sc := &scenarioRun{expect: filepath.Join(dir, "expect"), out: filepath.Join(dir, "output")}
	script := filepath.Join("..", "e2e", "scenarios", name, "run.sh")
	sc.cmd = exec.Command(script)
	// MNTLEAK_HOLD: the scenario's state stays 2.5 s before its cleanup,
	// for the oracle to check the last findings (a leak's settles 2 s).
	sc.cmd.Env = append(os.Environ(), "MNTLEAK_EXPECT="+sc.expect, "MNTLEAK_HOLD=2.5")
	outF, err := os.Create(sc.out)
	if err != nil {
		t.Fatal(err)
	}
	// A file, not a pipe: a process the scenario failed to clean up
	// must not hang the test by holding the pipe open.
	sc.cmd.Stdout, sc.cmd.Stderr = outF, outF
	t.Cleanup(func() { outF.Close() })
	text, err := os.ReadFile(script)
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`(?m)^tracing_begins\b`).Match(text) {
		return sc
	}
	sc.gate = filepath.Join(dir, "gate")
	sc.cmd.Env = append(sc.cmd.Env, "MNTLEAK_GATE="+sc.gate)
	if err := sc.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if !privtest.Poll(30*time.Second, func() bool { _, err := os.Stat(sc.gate + ".ready"); return err == nil }) {
		_ = sc.cmd.Process.Kill()
		_ = sc.cmd.Wait()
		out, _ := os.ReadFile(sc.out)
		t.Fatalf("scenario %s never reached tracing_begins:\n%s", name, out)
	}
	return sc
}

// run runs the scenario to its end: opens the gate of one already
// started (tracing has begun), or runs it whole.
func (sc *scenarioRun) run() error {
	if sc.gate == "" {
		return sc.cmd.Run()
	}
	if err := os.WriteFile(sc.gate+".go", nil, 0o644); err != nil {
		return err
	}
	return sc.cmd.Wait()
}
