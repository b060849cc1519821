package correlate_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// fakeProc is a /proc made of hand-built tables; a test edits it between
// events as the kernel would have changed it.
type fakeProc struct {
	procs    []procfs.Process
	tables   map[uint32]string // namespace -> mountinfo text
	pins     []procfs.Pin
	pinsErr  error // what Pins answers, when set
	procsErr error // what Processes answers (and no list), when set
	blocks   map[string]event.Dev
	links    map[string]string      // symbolic links: path -> target (absolute)
	nsfiles  map[string]uint32      // binds of mount namespaces' nsfs files
	commands map[int]procfs.Command // what Command answers for a pid, when set
	nsids    map[uint32]uint64      // what MntNSID answers for a namespace's processes
	nsfds    []procfs.NSFD          // open files of mount namespaces
	nsfdsErr error                  // what NSFDs answers with them, when set
	host     uint32
}

// MntNSID answers the id nsids gives pid's namespace (none: an error, as
// from a kernel without NS_GET_MNTNS_ID).
func (f *fakeProc) MntNSID(pid int) (uint32, uint64, error) {
	ns, ok := f.nsOf(pid)
	if !ok {
		return 0, 0, fmt.Errorf("no process %d", pid)
	}
	if id, ok := f.nsids[ns]; ok {
		return ns, id, nil
	}
	return ns, 0, errors.New("NS_GET_MNTNS_ID: inappropriate ioctl for device")
}

// nsOf is the namespace of a process, or of a thread listed in
// Process.Threads, by its id, as /proc/ID/ns/mnt says it.
func (f *fakeProc) nsOf(id int) (uint32, bool) {
	for _, p := range f.procs {
		if p.PID == id {
			return p.MntNS, true
		}
		for _, th := range p.Threads {
			if th.TID == id {
				return th.MntNS, true
			}
		}
	}
	return 0, false
}

func (f *fakeProc) NSFDs() ([]procfs.NSFD, error) {
	return append([]procfs.NSFD(nil), f.nsfds...), f.nsfdsErr
}

func (f *fakeProc) Processes() ([]procfs.Process, error) {
	if f.procsErr != nil {
		return nil, f.procsErr
	}
	return append([]procfs.Process(nil), f.procs...), nil
}

func (f *fakeProc) Mountinfo(pid int) (uint32, []*procfs.Mount, error) {
	ns, ok := f.nsOf(pid)
	if !ok {
		return 0, nil, fmt.Errorf("no process %d", pid)
	}
	mounts, err := mountsOf(f.tables[ns])
	return ns, mounts, err
}

// mountsOf is a mount table's text as mountinfo (the library) reads it,
// as the ledger's entries.
func mountsOf(text string) ([]*procfs.Mount, error) {
	ms, err := mountinfo.GetMountsFromReader(strings.NewReader(text), nil)
	return procfs.MountsOf(ms), err
}

func (f *fakeProc) Pins(devs []event.Dev) ([]procfs.Pin, error) {
	var unreadable *procfs.UnreadableError
	if f.pinsErr != nil && !errors.As(f.pinsErr, &unreadable) {
		return nil, f.pinsErr
	}
	var out []procfs.Pin
	for _, p := range f.pins {
		for _, d := range devs {
			if p.Dev == d {
				out = append(out, p)
			}
		}
	}
	return out, f.pinsErr // nil, or the processes that could not be read
}

func (f *fakeProc) BlockDevice(path string) (event.Dev, error) {
	if d, ok := f.blocks[path]; ok {
		return d, nil
	}
	return 0, fmt.Errorf("%s is not a block device", path)
}

func (f *fakeProc) HostNS() (uint32, error) { return f.host, nil }

// NSMountinfo reads a namespace's table through a bind of its nsfs file
// (nsfiles: the bind's path and the namespace).
func (f *fakeProc) NSMountinfo(file string) (uint32, []*procfs.Mount, error) {
	ns, ok := f.nsfiles[file]
	if !ok {
		return 0, nil, fmt.Errorf("%s is not a namespace file", file)
	}
	mounts, err := mountsOf(f.tables[ns])
	return ns, mounts, err
}

// RealPath resolves the links the world has (links: a path prefix and
// what it points to), as any process of the world sees them.
func (f *fakeProc) RealPath(pid int, p string) (string, uint32, error) {
	for _, pr := range f.procs {
		if pr.PID != pid {
			continue
		}
		for from, to := range f.links {
			if p == from || strings.HasPrefix(p, from+"/") {
				p = to + strings.TrimPrefix(p, from)
			}
		}
		return p, pr.MntNS, nil
	}
	return "", 0, fmt.Errorf("no process %d", pid)
}

func (f *fakeProc) Command(pid int) (procfs.Command, error) {
	if c, ok := f.commands[pid]; ok {
		return c, nil
	}
	all := append([]procfs.Process(nil), f.procs...)
	for _, p := range f.pins {
		all = append(all, p.Process)
	}
	for _, p := range all {
		if p.PID == pid {
			return procfs.Command{Exe: "/usr/bin/" + p.Comm, Cmdline: p.Comm + " --fake"}, nil
		}
	}
	return procfs.Command{}, fmt.Errorf("no process %d", pid)
}

const hostNS = 4026531840

// hostTable is a node: ext4 root, a block device at /srv/vol.
const hostTable = `1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw
2 1 0:5 / /tmp rw shared:2 - tmpfs tmpfs rw
3 1 7:0 / /srv/vol rw shared:3 - ext4 /dev/loop0 rw
`

// hostWithoutVol is the node after /srv/vol was unmounted.
var hostWithoutVol = strings.Replace(hostTable, "3 1 7:0 / /srv/vol rw shared:3 - ext4 /dev/loop0 rw\n", "", 1)

// world drives a correlator with hand-made events.
type world struct {
	t        *testing.T
	proc     *fakeProc
	c        *correlate.Correlator
	findings []*finding.Finding
	now      time.Time
	// sent, when set, sees every event send hands the correlator, as the
	// kernel side would (boundWorld's tracer tasks).
	sent func(*event.Event)
}

func newWorld(t *testing.T, procs []procfs.Process, tables map[uint32]string) *world {
	t.Helper()
	return newWorldOpts(t, correlate.Options{}, procs, tables)
}

func newWorldOpts(t *testing.T, opts correlate.Options, procs []procfs.Process, tables map[uint32]string) *world {
	t.Helper()
	return newWorldOf(t, opts, procs, tables, func(f *fakeProc) procfs.Proc { return f })
}

// newWorldOf is newWorldOpts with the /proc the correlator reads made from
// the world's fakeProc by as (a pinnerProc, say).
func newWorldOf(t *testing.T, opts correlate.Options, procs []procfs.Process, tables map[uint32]string, as func(*fakeProc) procfs.Proc) *world {
	t.Helper()
	w := &world{t: t, now: time.Date(2026, 11, 21, 12, 1, 0, 0, time.UTC)}
	if opts.LeakSettle == 0 {
		opts.LeakSettle = -1 // leaks at once; TestLeakSettles covers the settling
	}
	w.proc = &fakeProc{procs: procs, tables: tables, host: hostNS, blocks: map[string]event.Dev{"/dev/loop0": event.MakeDev(7, 0)}}
	w.c = correlate.New(as(w.proc), opts, func(f *finding.Finding) { w.findings = append(w.findings, f) })
	if err := w.c.Start(); err != nil {
		t.Fatal(err)
	}
	return w
}

// pinOn is a pin of /dev/loop0's filesystem by p.
func pinOn(p procfs.Process, kind procfs.PinKind, path string) procfs.Pin {
	return procfs.Pin{Process: p, Kind: kind, Dev: event.MakeDev(7, 0), Path: path}
}

func proc(pid int, comm string, ns uint32, cgroup string) procfs.Process {
	return procfs.Process{PID: pid, PPID: 1, StartTime: uint64(pid) * 10, Comm: comm, MntNS: ns, Cgroup: cgroup}
}

// send delivers events 200ms apart (longer than the settle delay).
func (w *world) send(evs ...*event.Event) {
	for _, ev := range evs {
		w.now = w.now.Add(200 * time.Millisecond)
		ev.Time, ev.MonoNS = w.now, uint64(w.now.UnixNano())
		if w.sent != nil {
			w.sent(ev)
		}
		w.c.Handle(ev)
	}
}

func base(kind event.Kind, pid int, comm string, ns uint32, nr int32, ret int64) *event.Event {
	ev := &event.Event{Kind: kind, PID: uint32(pid), TID: uint32(pid), Comm: comm, MntNS: ns, SyscallNr: nr, Ret: ret}
	if nr >= 0 {
		ev.Syscall = event.SyscallName(nr)
	}
	if ret < 0 {
		ev.Errno = event.ErrnoName(-ret)
	}
	return ev
}

func mountEv(pid int, comm string, ns uint32, src, target, fstype string, flags uint64, ret int64) *event.Event {
	ev := base(event.KindMount, pid, comm, ns, 165, ret)
	ev.Source, ev.Target, ev.FSType, ev.Flags = src, target, fstype, flags
	ev.FlagNames = event.FlagNames(event.KindMount, flags)
	return ev
}

func umountEv(pid int, comm string, ns uint32, target string, ret int64) *event.Event {
	ev := base(event.KindUmount, pid, comm, ns, 166, ret)
	ev.Target = target
	return ev
}

func unshareEv(pid int, comm string, before, after uint32) *event.Event {
	ev := base(event.KindUnshare, pid, comm, after, 272, 0)
	ev.Flags, ev.FlagNames, ev.MntNSBefore, ev.MntNSAfter = 0x20000, "CLONE_NEWNS", before, after
	return ev
}

func exitEv(pid int, comm string, ns uint32) *event.Event {
	return base(event.KindExit, pid, comm, ns, -1, 0)
}

func failEv(pid int, comm string, ns uint32, nr int32, path string, errno int64) *event.Event {
	ev := base(event.KindFailure, pid, comm, ns, nr, -errno)
	ev.Path, ev.FD = path, -1
	return ev
}

// only returns the single finding, failing otherwise.
func (w *world) only() *finding.Finding {
	w.t.Helper()
	if len(w.findings) != 1 {
		for _, f := range w.findings {
			w.t.Log(f.Line())
		}
		w.t.Fatalf("%d findings, want 1", len(w.findings))
	}
	return w.findings[0]
}
