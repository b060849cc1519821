package tracer_test

import (
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap/zaptest"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/tracer"
)

// TestPerfReorderTwoCPUs: two threads pinned to two CPUs take turns, one
// mount/umount pair each, so consecutive events come from different CPUs'
// perf buffers, which the reader drains one after the other. The sink
// sees every event, these and any other, in non-decreasing kernel time.
func TestPerfReorderTwoCPUs(t *testing.T) {
	privtest.Require(t)
	if runtime.NumCPU() < 2 {
		t.Skip("needs two CPUs")
	}
	// Longer than the default: the assertion is about the mechanism, and
	// on a machine busy with other tests the reader may be descheduled for
	// longer than 30ms (such events count as late, see Stats).
	cfg := tracer.Config{Buffer: tracer.BufferPerf, PerfReorderWindow: 250 * time.Millisecond}
	c := startTracerWith(t, cfg, zaptest.NewLogger(t))
	base := t.TempDir()
	const pairs = 16
	dirs := make([][]string, 2)
	for cpu := range dirs {
		for i := range pairs {
			dirs[cpu] = append(dirs[cpu], privtest.Mkdir(t, filepath.Join(base, fmt.Sprintf("cpu%d-%d", cpu, i))))
		}
	}

	// turn is whose turn it is, waited for by spinning: with both CPUs
	// busy the reader falls behind, so both CPUs' buffers fill and it
	// drains one after the other. Each thread reports its id, then one
	// error at the end.
	var turn atomic.Int32
	turn.Store(-1)
	tids := make(chan int, 2)
	errs := make(chan error, 2)
	for cpu := range 2 {
		go func() {
			runtimeLockForever() // the pinned thread ends with the goroutine
			var set unix.CPUSet
			set.Set(cpu)
			err := unix.SchedSetaffinity(0, &set)
			tids <- unix.Gettid()
			for i := range pairs {
				for turn.Load() != int32(cpu) {
				}
				if err == nil {
					if err = unix.Mount("mntleak-reorder", dirs[cpu][i], "tmpfs", 0, ""); err == nil {
						err = unix.Unmount(dirs[cpu][i], 0)
					}
				}
				turn.Store(int32(1 - cpu))
			}
			errs <- err
		}()
	}
	ours := map[uint32]bool{uint32(<-tids): true, uint32(<-tids): true}
	turn.Store(0)
	for range 2 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}

	mine := func(e *event.Event) bool {
		return (e.Kind == event.KindMount || e.Kind == event.KindUmount) && ours[e.TID]
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(c.matching(mine)) < 4*pairs && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	got := c.matching(mine)
	if len(got) != 4*pairs {
		t.Fatalf("%d events from the pinned threads, want %d", len(got), 4*pairs)
	}
	// The threads did take turns: by time, the thread changes every pair.
	switches := 0
	for i := 2; i < len(got); i += 2 {
		if got[i].TID != got[i-2].TID {
			switches++
		}
	}
	if switches < 2*pairs-1 {
		t.Errorf("the two threads' events alternate %d times, want %d", switches, 2*pairs-1)
	}
	all := c.matching(func(*event.Event) bool { return true })
	for i := 1; i < len(all); i++ {
		if all[i].MonoNS < all[i-1].MonoNS {
			t.Errorf("event %d (%s by tid %d at %d ns) reached the sink after event %d (%s by tid %d at %d ns)",
				i, all[i].Kind, all[i].TID, all[i].MonoNS, i-1, all[i-1].Kind, all[i-1].TID, all[i-1].MonoNS)
		}
	}
	st, err := c.tr.Stats()
	if err != nil {
		t.Fatal(err)
	}
	if st.PerfReorderLate != 0 || st.PerfReorderForced != 0 {
		t.Errorf("%d events late, %d released early", st.PerfReorderLate, st.PerfReorderForced)
	}
}
