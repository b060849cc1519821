package daemon

import (
	"github.com/mntleak/mntleak/event"
)

// cgroupCache keeps each process's cgroup path and mount namespace, read
// from /proc once, while the kernel's count of cgroup changes stands
// still (tracer.CgroupChanges): a container's runtime makes tens of mounts
// from one process, and each asks for its cgroup (a finding may name the
// container and pod that made it). A process whose cgroup changed is read
// again because the count moved; one that left its namespace (unshare,
// setns), one that exited (its pid may be another process's next), and
// every process after lost events, because the pipeline tells the cache
// (observe). Used from the pipeline's goroutine alone.
type cgroupCache struct {
	changes func() (uint64, bool)                 // the kernel's count; false: not readable, no caching
	read    func(pid int) (string, uint32, error) // /proc/PID/cgroup and /proc/PID/ns/mnt
	at      uint64                                // the count the entries were read under
	byPID   map[int]cgroupEntry
}

type cgroupEntry struct {
	cgroup string
	mntNS  uint32
}

func newCgroupCache(changes func() (uint64, bool), read func(int) (string, uint32, error)) *cgroupCache {
	return &cgroupCache{changes: changes, read: read, byPID: map[int]cgroupEntry{}}
}

// get is pid's cgroup path and mount namespace: kept, or read now.
func (c *cgroupCache) get(pid int) (string, uint32, error) {
	n, ok := c.changes()
	if !ok {
		return c.read(pid)
	}
	if n != c.at {
		clear(c.byPID)
		c.at = n
	}
	if e, ok := c.byPID[pid]; ok {
		return e.cgroup, e.mntNS, nil
	}
	// Kept under the count read before it: a change while it is read
	// moves the count, and the next get reads it again.
	cg, ns, err := c.read(pid)
	if err == nil {
		c.byPID[pid] = cgroupEntry{cgroup: cg, mntNS: ns}
	}
	return cg, ns, err
}

// observe forgets what ev makes untrue: the namespace of a process that
// unshared or entered another (by its main thread), a process that exited,
// and everything when events were lost.
func (c *cgroupCache) observe(ev *event.Event) {
	switch ev.Kind {
	case event.KindLost:
		clear(c.byPID)
	case event.KindExit:
		delete(c.byPID, int(ev.PID))
	case event.KindUnshare, event.KindSetns:
		if ev.TID == 0 || ev.TID == ev.PID {
			delete(c.byPID, int(ev.PID))
		}
	}
}
