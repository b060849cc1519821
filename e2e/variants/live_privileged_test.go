package variants

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/daemon"
	"github.com/mntleak/mntleak/e2e/findingset"
	"github.com/mntleak/mntleak/e2e/oracle"
	"github.com/mntleak/mntleak/e2e/oraclecheck"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
	"github.com/mntleak/mntleak/stream"
	"github.com/mntleak/mntleak/tracer"
)

// live is a tracer and a correlator running for one cell.
type live struct {
	mu         sync.Mutex
	findings   []*finding.Finding
	stop       func()             // ends tracing and flushes the correlator (nil once done)
	settleWait func(t testing.TB) // the settle window (privtest.AfterLeakSettle)
	t          *testing.T
	oracle     *oraclecheck.Checker // every finding of the cell is checked against the kernel's state
	marker     privtest.Marker      // caughtUp's call, waited for in the stream
	traced     bool                 // a tracer feeds it (startTracing); a check's test builds one without
}

func startTracing(t *testing.T) *live {
	t.Helper()
	l := &live{t: t, oracle: oraclecheck.New(t), settleWait: privtest.AfterLeakSettle, traced: true}
	var proc procfs.Proc = procfs.Host{}
	rec := recordTo(t)
	if rec != nil {
		proc = procfs.Recorder{Proc: proc, Write: func(r *procfs.Record) { rec(stream.ProcLine{Proc: r}) }}
	}
	corr := correlate.New(proc, correlate.Options{}, func(f *finding.Finding) {
		l.oracle.Witness(f)
		l.mu.Lock()
		l.findings = append(l.findings, f)
		l.mu.Unlock()
	})
	self := uint32(os.Getpid())
	log := zaptest.NewLogger(t)
	src := daemon.NewSources(log)
	tr, err := tracer.New(tracer.Config{Sink: func(ev *event.Event) {
		if ev.Kind == event.KindUmount {
			l.marker.Saw(ev.Target)
		}
		// As the daemon does (daemon/pipeline.go): the test's own events
		// are the correlator's reads (a thread entering a namespace to read
		// its table), not a process joining it.
		if ev.PID != self {
			// Prepared as the daemon prepares them: a new namespace's
			// birth id tells it from a namespace that had its inode.
			if err := correlate.Prepare(ev, src); err != nil {
				log.Warn("event not fully prepared", zap.Error(err))
			}
			if rec != nil {
				rec(ev)
			}
			corr.Handle(ev)
		}
	}}, log)
	if err != nil {
		t.Fatal(err)
	}
	if err := corr.Start(); err != nil {
		tr.Close()
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- tr.Run(ctx) }()
	l.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		corr.Flush()
		tr.Close()
	}
	t.Cleanup(func() {
		if l.stop != nil {
			l.stop()
		}
	})
	return l
}

// settle waits until any finding about what the cell did could have been
// made, and makes it: with control, out the leak settle window (a leak is
// held back 2 s, then confirmed if its copy is still there); then the
// last events reach the correlator, tracing ends and the correlator is
// flushed (every leak still pending is reported as it stands). After it,
// the findings are all there is.
func (l *live) settle(t testing.TB, control bool) {
	t.Helper()
	if control {
		l.settleWait(t)
	}
	time.Sleep(300 * time.Millisecond)
	if l.traced {
		l.caughtUp(t, 60*time.Second)
	}
	if l.stop != nil {
		l.stop()
		l.stop = nil
	}
}

// holderSeen returns once the correlator has had the time to read what a
// holder the cell just made copied, and has handled every event made
// before it: 300 ms, beyond the 100 ms after which a new namespace's quiet
// table is read at the next event, then the marker. A teardown made at
// once after the holder's creation, before its table was read, is
// another case (docs/trace.md).
func (l *live) holderSeen(t testing.TB) {
	t.Helper()
	time.Sleep(300 * time.Millisecond)
	l.caughtUp(t, 60*time.Second)
}

// caughtUp returns once every event made before it was called has
// reached the correlator (at most d; privtest.Marker): tracing stopped by
// settle drains only for a moment.
func (l *live) caughtUp(t testing.TB, d time.Duration) { l.marker.CaughtUp(t, d) }

// all returns every finding so far.
func (l *live) all() []*finding.Finding {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]*finding.Finding(nil), l.findings...)
}

// about returns the findings on the cell's device or mount point, each
// checked against the oracle's answer taken when it arrived.
func (l *live) about(dev, vol string) []*finding.Finding {
	l.mu.Lock()
	var out []*finding.Finding
	for _, f := range l.findings {
		if f.Object.Path == dev || f.Object.Path == vol {
			out = append(out, f)
		}
	}
	l.mu.Unlock()
	for _, f := range out {
		l.oracle.Check(l.t, f)
	}
	return out
}

// controlDevices asserts, for each block device among a churn control's
// objects (a tmpfs has no name left to look it up by after its teardown),
// that the oracle finds it held nowhere.
func (l *live) controlDevices(t *testing.T, o objects) {
	t.Helper()
	for _, p := range o.paths {
		var st unix.Stat_t
		if unix.Stat(p, &st) != nil || st.Mode&unix.S_IFMT != unix.S_IFBLK {
			continue
		}
		target, err := oracle.PathTarget(p)
		if err != nil {
			t.Fatal(err)
		}
		l.oracle.Control(t, target, slices.DeleteFunc(slices.Clone(o.paths), func(q string) bool { return q == p }))
	}
}

// volumeTarget is what the oracle looks up for a cell's volume: the loop
// device, or a tmpfs's superblock seen through the node's root (read while
// it is mounted).
func volumeTarget(t *testing.T, node privtest.Node, dev, vol string) oracle.Target {
	t.Helper()
	path := dev
	if dev == vol {
		path = "/proc/" + strconv.Itoa(node.PID) + "/root" + vol
	}
	target, err := oracle.PathTarget(path)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// wait returns the first finding about the cell that match accepts.
func (l *live) wait(dev, vol string, d time.Duration, match func(*finding.Finding) bool) *finding.Finding {
	var found *finding.Finding
	privtest.Poll(d, func() bool {
		for _, f := range l.about(dev, vol) {
			if match(f) {
				found = f
				return true
			}
		}
		return false
	})
	return found
}

// holder is the process a cell's verdict must name, and its namespace.
type holder struct {
	pid int
	ns  uint32
	id  uint64 // ns's birth id (findingset.BirthID; 0: not known)
}

// check asserts the verdict: cause, the process named (pid, role), its
// namespace, and a fix that names only live processes the finding holds.
func check(t testing.TB, f *finding.Finding, cause finding.Cause, h holder, role string) {
	t.Helper()
	if f == nil {
		t.Fatalf("no finding; want %s naming pid %d in mnt:[%d]", cause, h.pid, h.ns)
	}
	hd, a := f.Actor()
	if f.Cause != cause || a == nil || a.PID != h.pid || a.Role != role || hd.MntNS != h.ns || f.Fix == "" {
		t.Errorf("want %s naming pid %d (%s) in mnt:[%d]; got %s, actor %+v:\n%s", cause, h.pid, role, h.ns, f.Cause, a, f.Line())
	}
	findingset.FixPIDs(t, f, h.pid)
}

// recordTo returns a writer of the cell's recording (its events and the
// /proc answers, as mntleak trace --record writes them) when
// MNTLEAK_TEST_RECORD names a directory, nil otherwise: a cell that fails
// is replayed from it (mntleak replay) to see what the correlator saw.
func recordTo(t *testing.T) func(v any) {
	dir := os.Getenv("MNTLEAK_TEST_RECORD")
	if dir == "" {
		return nil
	}
	f, err := os.Create(filepath.Join(dir, strings.NewReplacer("/", "_", " ", "_").Replace(t.Name())+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	t.Cleanup(func() { _ = f.Close() })
	return func(v any) {
		mu.Lock()
		defer mu.Unlock()
		b, err := json.Marshal(v)
		if err == nil {
			_, err = f.Write(append(b, '\n'))
		}
		if err != nil {
			t.Errorf("record: %v", err)
		}
	}
}
