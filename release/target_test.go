package release

import (
	"fmt"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/procfs"
)

// fakeProcs answers CopyTarget's and BirthID's reads of /proc: processes,
// each one's table (by pid: its namespace and mounts), the tables behind
// nsfs files, and the open namespace fds.
type fakeProcs struct {
	procs    []procfs.Process
	procsErr error
	tables   map[int]fakeTable    // by pid
	nsFiles  map[string]fakeTable // by nsfs file
	fds      []procfs.NSFD
}

type fakeTable struct {
	ns     uint32
	mounts []*procfs.Mount
	err    error
}

func (f *fakeProcs) Processes() ([]procfs.Process, error) { return f.procs, f.procsErr }

func (f *fakeProcs) Mountinfo(pid int) (uint32, []*procfs.Mount, error) {
	t, ok := f.tables[pid]
	if !ok {
		return 0, nil, fmt.Errorf("open /proc/%d/mountinfo: no such file", pid)
	}
	return t.ns, t.mounts, t.err
}

func (f *fakeProcs) NSMountinfo(file string) (uint32, []*procfs.Mount, error) {
	t, ok := f.nsFiles[file]
	if !ok {
		return 0, nil, fmt.Errorf("open %s: no such file", file)
	}
	return t.ns, t.mounts, t.err
}

func (f *fakeProcs) NSFDs() ([]procfs.NSFD, error) { return f.fds, nil }

// targetWorld: mnt:[9] has a tmpfs (mount 102 at /srv/vol, 0:38) and a
// bind of a network namespace's file (mount 103); the host (mnt:[1], pid
// 1) has a bind of mnt:[9]'s file at /run/mntns/x; pid 40 (in mnt:[1])
// holds mnt:[9]'s file open as fd 7 and fd 5, pid 30 as fd 9. With
// member, pid 77 runs in mnt:[9].
func targetWorld(member bool) *fakeProcs {
	inner := []*procfs.Mount{
		{ID: 100, MountShape: &procfs.MountShape{Major: 254, Minor: 0, Mountpoint: "/", Root: "/", FSType: "ext4"}},
		{ID: 102, MountShape: &procfs.MountShape{Major: 0, Minor: 38, Mountpoint: "/srv/vol", Root: "/", FSType: "tmpfs"}},
		{ID: 103, MountShape: &procfs.MountShape{Major: 0, Minor: 4, Mountpoint: "/run/netns/a", Root: "net:[4026532300]", FSType: "nsfs"}},
	}
	host := []*procfs.Mount{
		{ID: 20, MountShape: &procfs.MountShape{Major: 254, Minor: 0, Mountpoint: "/", Root: "/", FSType: "ext4"}},
		{ID: 21, MountShape: &procfs.MountShape{Major: 0, Minor: 4, Mountpoint: "/run/mntns/x", Root: "mnt:[9]", FSType: "nsfs"}},
	}
	f := &fakeProcs{
		procs:   []procfs.Process{{PID: 1, MntNS: 1}, {PID: 30, MntNS: 1}, {PID: 40, MntNS: 1}},
		tables:  map[int]fakeTable{1: {ns: 1, mounts: host}, 30: {ns: 1, mounts: host}, 40: {ns: 1, mounts: host}},
		nsFiles: map[string]fakeTable{"/proc/1/root/run/mntns/x": {ns: 9, mounts: inner}, "/proc/30/fd/9": {ns: 9, mounts: inner}},
		fds:     []procfs.NSFD{{Process: procfs.Process{PID: 40}, FD: 7, NS: 9}, {Process: procfs.Process{PID: 30}, FD: 9, NS: 9}, {Process: procfs.Process{PID: 40}, FD: 5, NS: 8}},
	}
	if member {
		f.procs = append(f.procs, procfs.Process{PID: 77, MntNS: 9})
		f.tables[77] = fakeTable{ns: 9, mounts: inner}
	}
	return f
}

func TestCopyTarget(t *testing.T) {
	always := func(string) bool { return true }
	never := func(string) bool { return false }
	for _, tc := range []struct {
		name   string
		member bool
		change func(*fakeProcs)
		exists func(string) bool
		id     int
		want   correlate.Target
		where  string
		err    string
	}{
		{name: "through a member", member: true, exists: never, id: 102, want: correlate.Target{Dev: event.MakeDev(0, 38)}, where: "/srv/vol"},
		{name: "through a member, no other way in", member: true, exists: never, id: 102, change: func(f *fakeProcs) { f.fds = nil },
			want: correlate.Target{Dev: event.MakeDev(0, 38)}, where: "/srv/vol"},
		{name: "through a thread that keeps it", exists: never, id: 102, change: func(f *fakeProcs) {
			f.fds = nil
			f.procs[1].Threads = []procfs.Thread{{TID: 31, MntNS: 9}}
			f.tables[31] = f.nsFiles["/proc/30/fd/9"]
		}, want: correlate.Target{Dev: event.MakeDev(0, 38)}, where: "/srv/vol"},
		{name: "an nsfs bind names its file", member: true, exists: never, id: 103,
			want: correlate.Target{Dev: event.MakeDev(0, 4), Root: "net:[4026532300]"}, where: "/run/netns/a"},
		{name: "a member moved since", member: true, exists: always, id: 102, change: func(f *fakeProcs) { f.tables[77] = fakeTable{ns: 8} },
			want: correlate.Target{Dev: event.MakeDev(0, 38)}, where: "/srv/vol"},
		{name: "through the bind of its file", exists: always, id: 102, want: correlate.Target{Dev: event.MakeDev(0, 38)}, where: "/srv/vol"},
		{name: "through an open fd, the lowest pid's", exists: never, id: 102, want: correlate.Target{Dev: event.MakeDev(0, 38)}, where: "/srv/vol"},
		{name: "no way in", exists: never, id: 102, change: func(f *fakeProcs) { f.fds = nil },
			err: "no process runs in mnt:[9], and no bind of its nsfs file nor a process holding it open was found"},
		{name: "the file names another namespace now", exists: always, id: 102,
			change: func(f *fakeProcs) { f.nsFiles["/proc/1/root/run/mntns/x"] = fakeTable{ns: 8} },
			err:    "/proc/1/root/run/mntns/x names mnt:[8] now, not mnt:[9]"},
		{name: "the file's table unreadable", exists: always, id: 102,
			change: func(f *fakeProcs) { f.nsFiles["/proc/1/root/run/mntns/x"] = fakeTable{err: errFake} }, err: "the act failed"},
		{name: "no such mount", member: true, exists: never, id: 104, err: "mnt:[9] has no mount 104"},
		{name: "no process list", change: func(f *fakeProcs) { f.procsErr = errFake }, exists: never, err: "the act failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := targetWorld(tc.member)
			if tc.change != nil {
				tc.change(f)
			}
			got, where, err := copyTarget(f, tc.exists, 9, tc.id)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want || where != tc.where {
				t.Fatalf("%+v at %q, err %v; want %+v at %q", got, where, err, tc.want, tc.where)
			}
		})
	}
}

// An open fd is named by the lowest pid, then fd: the same every time.
func TestNSFDLowest(t *testing.T) {
	f := targetWorld(false)
	if got := nsFD(f, 9); got != "/proc/30/fd/9" {
		t.Errorf("%q, want /proc/30/fd/9", got)
	}
	f.fds = append(f.fds, procfs.NSFD{Process: procfs.Process{PID: 30}, FD: 4, NS: 9})
	if got := nsFD(f, 9); got != "/proc/30/fd/4" {
		t.Errorf("%q, want /proc/30/fd/4", got)
	}
	// The lowest first, then others of the namespace.
	f.fds = []procfs.NSFD{{Process: procfs.Process{PID: 30}, FD: 4, NS: 9}, {Process: procfs.Process{PID: 30}, FD: 9, NS: 9}, {Process: procfs.Process{PID: 40}, FD: 2, NS: 9}}
	if got := nsFD(f, 9); got != "/proc/30/fd/4" {
		t.Errorf("%q, want /proc/30/fd/4, the first listed", got)
	}
	if got := nsFD(f, 7); got != "" {
		t.Errorf("%q for a namespace no fd holds, want none", got)
	}
}

func TestBirthIDOfTheLiveNamespace(t *testing.T) {
	for _, tc := range []struct {
		name   string
		member bool
		files  map[string][2]uint64
		exists func(string) bool
		change func(*fakeProcs)
		id     uint64
		file   string
		err    string
	}{
		{name: "through a member", member: true, files: map[string][2]uint64{"/proc/77/ns/mnt": {9, 50}}, id: 50, file: "/proc/77/ns/mnt"},
		{name: "the member gone, through the bind", member: true, exists: func(string) bool { return true },
			files: map[string][2]uint64{"/proc/1/root/run/mntns/x": {9, 50}}, id: 50, file: "/proc/1/root/run/mntns/x"},
		{name: "through a thread that keeps it", change: func(f *fakeProcs) { f.procs[1].Threads = []procfs.Thread{{TID: 31, MntNS: 9}} },
			files: map[string][2]uint64{"/proc/31/ns/mnt": {9, 52}}, id: 52, file: "/proc/31/ns/mnt"},
		{name: "through an open fd", files: map[string][2]uint64{"/proc/30/fd/9": {9, 51}}, id: 51, file: "/proc/30/fd/9"},
		{name: "every file names another namespace", member: true, files: map[string][2]uint64{"/proc/77/ns/mnt": {8, 50}, "/proc/30/fd/9": {8, 50}},
			err: "mnt:[9]: none of [/proc/77/ns/mnt /proc/30/fd/9] names it now"},
		{name: "no way in", change: func(f *fakeProcs) { f.fds = nil }, err: "no process runs in mnt:[9]"},
		{name: "no process list", change: func(f *fakeProcs) { f.procsErr = errFake }, err: "the act failed"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := targetWorld(tc.member)
			if tc.change != nil {
				tc.change(f)
			}
			exists := tc.exists
			if exists == nil {
				exists = func(string) bool { return false }
			}
			k := &fakeKernel{files: tc.files}
			id, file, err := birthID(f, k, exists, 9)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || id != tc.id || file != tc.file {
				t.Fatalf("id %d through %q, err %v; want %d through %q", id, file, err, tc.id, tc.file)
			}
			if k.open != 0 {
				t.Errorf("%d fds left open", k.open)
			}
		})
	}
}

func TestFileExists(t *testing.T) {
	if !fileExists("/proc/self") || fileExists("/nonexistent/x") {
		t.Errorf("fileExists: /proc/self %v, /nonexistent/x %v", fileExists("/proc/self"), fileExists("/nonexistent/x"))
	}
}
