package daemon

import (
	"os"

	"go.uber.org/zap"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/logkey"
	"github.com/mntleak/mntleak/procfs"
	"github.com/mntleak/mntleak/teardown"
)

// Sources answers, from /proc and sysfs, what correlate.Prepare asks of an
// event that the kernel did not give (correlate.Sources): a process's
// command and cgroup, a new namespace's birth id, a teardown call's
// device. The pipeline prepares every event with one; a harness that
// drives a correlator from a tracer of its own prepares with one too, so
// that it judges what the daemon judges (without it, a namespace has no
// birth id, and a reused inode cannot be told from it). The zero value
// reads /proc and names no teardown device.
type Sources struct {
	Host    procfs.Host
	Devices *teardown.Resolver // names a teardown call's device; nil: none
	Log     *zap.Logger        // nil: nothing logged
	// Tasks is the tracer's tasks (correlate.Options.Tasks): a new
	// namespace's birth id is read through one of those in it before
	// /proc is listed for one. Nil: /proc is listed.
	Tasks func() ([]event.Task, bool, error)
	// cgroups keeps the cgroups read (cgroups.go); nil: each is read.
	cgroups *cgroupCache
}

// NewSources returns the Sources of the daemon: /proc, and /sys for the
// devices of teardown calls.
func NewSources(log *zap.Logger) Sources {
	return Sources{Devices: &teardown.Resolver{Sys: os.DirFS("/sys")}, Log: log}
}

// Command is a process's executable and command line.
func (s Sources) Command(pid int) (procfs.Command, error) { return s.Host.Command(pid) }

// Cgroup is a process's cgroup path and mount namespace.
func (s Sources) Cgroup(pid int) (string, uint32, error) {
	if s.cgroups != nil {
		return s.cgroups.get(pid)
	}
	return s.Host.Cgroup(pid)
}

// observe tells the kept cgroups (if any) of an event before it is
// prepared.
func (s Sources) observe(ev *event.Event) {
	if s.cgroups != nil {
		s.cgroups.observe(ev)
	}
}

// Teardown names the device a teardown call named, from sysfs; nothing
// without Devices.
func (s Sources) Teardown(ev *event.Event) error {
	if s.Devices == nil {
		return nil
	}
	return s.Devices.Enrich(ev)
}

// BirthID is the id the kernel gave namespace ino (0 when it cannot be
// read), read through pid, the process the event says made it or was
// born into it, or, when that one has left already (runc's
// runc:[1:CHILD] unshares and exits at once), through a process in the
// namespace now; each read checks the process is in ino. The tracer's
// tasks name those (the container's init runc's child forked inside);
// where none of them answers, /proc is listed for one.
func (s Sources) BirthID(pid int, ino uint32) uint64 {
	if got, id, err := s.Host.MntNSID(pid); err == nil && got == ino {
		return id
	}
	if s.Tasks != nil {
		if tasks, _, err := s.Tasks(); err == nil {
			for _, t := range tasks {
				if t.MntNS != ino {
					continue
				}
				if got, id, err := s.Host.MntNSID(t.TID); err == nil && got == ino {
					return id
				}
			}
		}
	}
	procs, err := s.Host.Processes()
	if err != nil {
		if s.Log != nil {
			s.Log.Debug("birth id: list processes", zap.Uint32(logkey.MntNS, ino), zap.Error(err))
		}
		return 0
	}
	for _, q := range procs {
		if q.MntNS != ino {
			continue
		}
		if got, id, err := s.Host.MntNSID(q.PID); err == nil && got == ino {
			return id
		}
	}
	return 0
}
