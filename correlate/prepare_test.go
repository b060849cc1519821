package correlate_test

import (
	"errors"
	"strconv"
	"strings"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// askedSources answers Prepare and notes what it was asked.
type askedSources struct {
	commands []int
	cgroups  []int
	alive    map[int]bool
	births   [][2]uint64
	teardown error
}

func (s *askedSources) Command(pid int) (procfs.Command, error) {
	s.commands = append(s.commands, pid)
	return procfs.Command{Exe: "/usr/sbin/mkfs.ext4", Cmdline: "mkfs.ext4 /dev/loop3"}, nil
}

// Cgroup answers for the processes alive (none: all), each in
// mount namespace 40.
func (s *askedSources) Cgroup(pid int) (string, uint32, error) {
	s.cgroups = append(s.cgroups, pid)
	if s.alive != nil && !s.alive[pid] {
		return "", 0, errors.New("read /proc/" + strconv.Itoa(pid) + "/cgroup: no such file or directory")
	}
	return "/kubepods/burstable/pod0c2f3a1e-7d4b-4c3e-9a1f-2b3c4d5e6f70/" + strings.Repeat("ab", 32), 40, nil
}

func (s *askedSources) BirthID(pid int, ino uint32) uint64 {
	s.births = append(s.births, [2]uint64{uint64(pid), uint64(ino)})
	return 77
}

func (s *askedSources) Teardown(*event.Event) error { return s.teardown }

// Prepare asks only what the event needs: a failure's command and cgroup,
// a mount's cgroup, a new namespace's birth id (through the process in
// it), and it names the call whose teardown device could not be named.
func TestPrepareAsksWhatTheEventNeeds(t *testing.T) {
	busy := &event.Event{Kind: event.KindFailure, PID: 12, Syscall: "openat", Ret: -int64(unix.EBUSY)}
	src := &askedSources{}
	if err := correlate.Prepare(busy, src); err != nil || busy.Exe != "/usr/sbin/mkfs.ext4" || busy.Cmdline != "mkfs.ext4 /dev/loop3" ||
		len(src.commands) != 1 || len(src.cgroups) != 1 || busy.Cgroup == "" || len(src.births) != 0 {
		t.Errorf("a failure: err %v, exe %q cmdline %q, asked commands %v births %v", err, busy.Exe, busy.Cmdline, src.commands, src.births)
	}
	mount := &event.Event{Kind: event.KindMount, PID: 13, Ret: 0}
	src = &askedSources{}
	if err := correlate.Prepare(mount, src); err != nil || mount.Exe != "" || len(src.commands) != 0 || len(src.births) != 0 ||
		len(src.cgroups) != 1 || src.cgroups[0] != 13 || correlate.PodUID(mount.Cgroup) != "0c2f3a1e-7d4b-4c3e-9a1f-2b3c4d5e6f70" {
		t.Errorf("a mount that worked: err %v, exe %q cgroup %q, asked commands %v cgroups %v births %v", err, mount.Exe, mount.Cgroup, src.commands, src.cgroups, src.births)
	}
	failed := &event.Event{Kind: event.KindMount, PID: 17, Ret: -int64(unix.EPERM)}
	src = &askedSources{}
	if err := correlate.Prepare(failed, src); err != nil || failed.Cgroup != "" || len(src.cgroups) != 0 {
		t.Errorf("a mount that failed with EPERM: err %v, cgroup %q, asked cgroups %v", err, failed.Cgroup, src.cgroups)
	}
	fork := &event.Event{Kind: event.KindNewNSFork, PID: 14, ChildPID: 15, ChildMntNS: 4026532290}
	src = &askedSources{}
	if err := correlate.Prepare(fork, src); err != nil || fork.NewMntNSID != 77 || len(src.births) != 1 || src.births[0] != [2]uint64{15, 4026532290} {
		t.Errorf("a CLONE_NEWNS child: err %v, birth id %d, asked %v", err, fork.NewMntNSID, src.births)
	}
	write := &event.Event{Kind: event.KindFailure, PID: 16, Syscall: "write", Path: "/sys/bus/rbd/remove", Ret: -int64(unix.EBUSY)}
	src = &askedSources{teardown: errors.New("read /sys/bus/rbd/devices/3/major: no such file")}
	if err := correlate.Prepare(write, src); err == nil || !strings.Contains(err.Error(), "write /sys/bus/rbd/remove") || !errors.Is(err, src.teardown) {
		t.Errorf("a teardown device not named: err %v, want it naming the call", err)
	}
}

// The cgroup of a process that exited before its event was read (mount(8)
// in a container's shell) is its parent's, while the parent runs in the
// event's mount namespace; never that of a parent elsewhere (a container's
// init and the runtime's shim on the node).
func TestPrepareCgroupOfAGoneProcess(t *testing.T) {
	for _, tc := range []struct {
		name   string
		mntns  uint32
		want   bool
		parent bool // the parent is alive
	}{
		{"its parent in the same namespace", 40, true, true},
		{"its parent in another namespace", 41, false, true},
		{"its parent gone too", 40, false, false},
	} {
		ev := &event.Event{Kind: event.KindMount, PID: 21, PPID: 20, MntNS: tc.mntns}
		src := &askedSources{alive: map[int]bool{20: tc.parent}}
		if err := correlate.Prepare(ev, src); err != nil || (ev.Cgroup != "") != tc.want || len(src.cgroups) != 2 || src.cgroups[1] != 20 {
			t.Errorf("%s: err %v, cgroup %q (want one: %v), asked %v", tc.name, err, ev.Cgroup, tc.want, src.cgroups)
		}
	}
}
