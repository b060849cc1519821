package daemon

import (
	"errors"
	"testing"

	"github.com/mntleak/mntleak/event"
)

// cgroupWorld is a cache over a /proc that counts its reads, and a count
// of cgroup changes the test moves.
type cgroupWorld struct {
	count    uint64
	readable bool
	reads    int
	cgroup   map[int]string
	during   func() // runs inside a read, before it answers
}

func (w *cgroupWorld) changes() (uint64, bool) { return w.count, w.readable }

func (w *cgroupWorld) read(pid int) (string, uint32, error) {
	w.reads++
	if w.during != nil {
		w.during()
	}
	cg, ok := w.cgroup[pid]
	if !ok {
		return "", 0, errors.New("no such process")
	}
	return cg, 7, nil
}

// A process's cgroup is read once while nothing changes, and again after
// a cgroup change, its exit, its main thread's move to another namespace,
// and lost events; not after another thread's move. A read during which a
// cgroup changed is not kept; nothing is kept where the count cannot be
// read.
func TestCgroupCacheReadsAgainOnlyWhenItMayHaveChanged(t *testing.T) {
	moved := func(w *cgroupWorld) { w.count++; w.cgroup[10] = "/docker/b" }
	for _, tc := range []struct {
		name  string
		step  func(w *cgroupWorld, c *cgroupCache)
		reads int // of the second get
		want  string
	}{
		{"nothing changed", func(*cgroupWorld, *cgroupCache) {}, 0, "/docker/a"},
		{"a cgroup changed", func(w *cgroupWorld, _ *cgroupCache) { moved(w) }, 1, "/docker/b"},
		{"the process exited", func(w *cgroupWorld, c *cgroupCache) {
			w.cgroup[10] = "/other" // its pid is another process's next
			c.observe(&event.Event{Kind: event.KindExit, PID: 10})
		}, 1, "/other"},
		{"its main thread unshared", func(_ *cgroupWorld, c *cgroupCache) {
			c.observe(&event.Event{Kind: event.KindUnshare, PID: 10, TID: 10})
		}, 1, "/docker/a"},
		{"its main thread entered another namespace", func(_ *cgroupWorld, c *cgroupCache) {
			c.observe(&event.Event{Kind: event.KindSetns, PID: 10})
		}, 1, "/docker/a"},
		{"another thread of it unshared", func(_ *cgroupWorld, c *cgroupCache) {
			c.observe(&event.Event{Kind: event.KindUnshare, PID: 10, TID: 11})
		}, 0, "/docker/a"},
		{"another process exited", func(_ *cgroupWorld, c *cgroupCache) {
			c.observe(&event.Event{Kind: event.KindExit, PID: 12})
		}, 0, "/docker/a"},
		{"events were lost", func(_ *cgroupWorld, c *cgroupCache) {
			c.observe(&event.Event{Kind: event.KindLost, Lost: 1})
		}, 1, "/docker/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := &cgroupWorld{count: 3, readable: true, cgroup: map[int]string{10: "/docker/a", 12: "/"}}
			c := newCgroupCache(w.changes, w.read)
			if cg, _, err := c.get(10); err != nil || cg != "/docker/a" || w.reads != 1 {
				t.Fatalf("first get: %q, %v, %d reads; want /docker/a, 1 read", cg, err, w.reads)
			}
			tc.step(w, c)
			w.reads = 0
			cg, ns, err := c.get(10)
			if err != nil || cg != tc.want || ns != 7 || w.reads != tc.reads {
				t.Errorf("second get: %q mnt:[%d], %v, %d reads; want %q mnt:[7], %d reads", cg, ns, err, w.reads, tc.want, tc.reads)
			}
		})
	}
	t.Run("a cgroup changed while it was read", func(t *testing.T) {
		w := &cgroupWorld{count: 3, readable: true, cgroup: map[int]string{10: "/docker/a"}}
		c := newCgroupCache(w.changes, w.read)
		w.during = func() { w.count++ }
		c.get(10)
		w.during, w.reads = nil, 0
		c.get(10)
		if w.reads != 1 {
			t.Errorf("%d reads after a read a change overlapped, want 1 (not kept)", w.reads)
		}
	})
	t.Run("the count cannot be read", func(t *testing.T) {
		w := &cgroupWorld{cgroup: map[int]string{10: "/docker/a"}}
		c := newCgroupCache(w.changes, w.read)
		c.get(10)
		c.get(10)
		if w.reads != 2 {
			t.Errorf("%d reads of two gets, want 2", w.reads)
		}
	})
	t.Run("a process that cannot be read", func(t *testing.T) {
		w := &cgroupWorld{readable: true, cgroup: map[int]string{}}
		c := newCgroupCache(w.changes, w.read)
		if _, _, err := c.get(10); err == nil {
			t.Fatal("no error for a process that is not there")
		}
		w.cgroup[10] = "/docker/a"
		if cg, _, err := c.get(10); err != nil || cg != "/docker/a" {
			t.Errorf("after it appeared: %q, %v; want /docker/a", cg, err)
		}
	})
}
