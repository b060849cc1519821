package correlate_test

import (
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// pinnerProc is a fakeProc that answers PinsIn as procfs.Host does: every
// candidate (every process without them) is told by its namespace link,
// the main thread's and its threads', counted in links; a kernel thread's
// too, and it is never named. With list, it implements procfs.Lister and
// procfs.KernelLister too (listingProc). Pins, the search of every
// process's files, is counted in scans.
type pinnerProc struct {
	*fakeProc
	kernel   []procfs.Process // kernel threads: in /proc, not in Processes
	links    int              // processes whose namespace link was read
	scans    int              // searches of every process's files
	listings int              // listings of /proc (PIDs)
	lists    int              // process lists (ProcessList)
	reads    int              // processes read alone (ReadProcesses)
	// started is every process of the node when tracing began (Start), by
	// pid and start time: a process not among them was born under
	// tracing, and the tracer's tasks have it (tasks).
	started map[[2]uint64]bool
	// moves are the threads that moved under tracing (a successful
	// unshare or setns sent), where they went.
	moves map[int]event.Task
}

// tasks is what the tracer's task map holds (tracer.Tasks): every process
// born under tracing, with its threads, where each is now; and every
// thread that moved under tracing, where it went (the process list shows
// where it is now, when it does). A thread that stayed while its main
// thread moved is not one.
func (p *pinnerProc) tasks() ([]event.Task, bool, error) {
	var out []event.Task
	for _, pr := range p.procs {
		born := !p.started[[2]uint64{uint64(pr.PID), pr.StartTime}]
		if _, moved := p.moves[pr.PID]; born || moved {
			out = append(out, event.Task{TID: pr.PID, PID: pr.PID, MntNS: pr.MntNS})
		}
		for _, th := range pr.Threads {
			if _, moved := p.moves[th.TID]; born || moved {
				out = append(out, event.Task{TID: th.TID, PID: pr.PID, MntNS: th.MntNS})
			}
		}
	}
	return out, true, nil
}

// move records a thread's successful unshare or setns, as the kernel side
// does in its task map.
func (p *pinnerProc) move(ev *event.Event) {
	if (ev.Kind != event.KindUnshare && ev.Kind != event.KindSetns) || ev.Ret != 0 {
		return
	}
	tid := int(ev.TID)
	if tid == 0 {
		tid = int(ev.PID)
	}
	p.moves[tid] = event.Task{TID: tid, PID: int(ev.PID), MntNS: ev.MntNSAfter}
}

func (p *pinnerProc) Pins(devs []event.Dev) ([]procfs.Pin, error) {
	p.scans++
	return p.fakeProc.Pins(devs)
}

type listingProc struct{ *pinnerProc }

// PIDs lists the processes and kernel threads in /proc's order (by name).
func (l listingProc) PIDs() ([]int, error) {
	l.listings++
	return l.pids(), nil
}

func (l listingProc) ProcessList() (procfs.ProcessList, error) {
	l.lists++
	procs, err := l.Processes()
	return procfs.ProcessList{Procs: procs, Kernel: l.kernel}, err
}

// ReadProcesses reads the processes of pids that are there, in the order
// of pids (procfs.ProcessReader).
func (l listingProc) ReadProcesses(pids []int) ([]procfs.Process, error) {
	var out []procfs.Process
	for _, pid := range pids {
		if i := slices.IndexFunc(l.procs, func(p procfs.Process) bool { return p.PID == pid }); i >= 0 {
			l.reads++
			out = append(out, l.procs[i])
		}
	}
	return out, nil
}

func (p *pinnerProc) pids() []int {
	var out []int
	for _, pr := range append(slices.Clip(p.procs), p.kernel...) {
		out = append(out, pr.PID)
	}
	sort.Slice(out, func(i, j int) bool { return strconv.Itoa(out[i]) < strconv.Itoa(out[j]) })
	return out
}

func (p *pinnerProc) PinsIn(devs []event.Dev, mntns []uint32, candidates []int) ([]procfs.Pin, error) {
	if candidates == nil {
		candidates = p.pids()
	}
	var out []procfs.Pin
	for _, pid := range candidates {
		if slices.ContainsFunc(p.kernel, func(k procfs.Process) bool { return k.PID == pid }) {
			p.links++ // read, never named
			continue
		}
		i := slices.IndexFunc(p.procs, func(pr procfs.Process) bool { return pr.PID == pid })
		if i < 0 {
			continue // gone
		}
		p.links++
		pr := p.procs[i]
		in := slices.Contains(mntns, pr.MntNS)
		for _, th := range pr.Threads {
			in = in || slices.Contains(mntns, th.MntNS)
		}
		if !in {
			continue
		}
		for _, pin := range p.pins {
			if pin.PID == pid && slices.Contains(devs, pin.Dev) {
				pin.Process = pr
				out = append(out, pin)
			}
		}
	}
	return out, nil
}

// boundWorld is a world whose /proc answers PinsIn, and lists pids when
// list is set: a node of crowd host processes and a holder namespace
// (mnt:[80], app[20]) that has a tmpfs at /srv/src the node does not, as
// the latency bench's crowd has.
// boundBy is how a failure's pin search is bounded in boundWorld.
type boundBy int

const (
	boundNone  boundBy = iota // every process is read
	boundList                 // by the lineage and a listing of /proc
	boundTasks                // by the lineage and the tracer's tasks
)

func (b boundBy) String() string {
	return [...]string{"every process", "the /proc listing", "the tracer's tasks"}[b]
}

func boundWorld(t *testing.T, crowd int, bound boundBy) (*world, *pinnerProc) {
	t.Helper()
	w := &world{t: t, now: time.Date(2026, 11, 26, 18, 0, 0, 0, time.UTC)}
	procs := []procfs.Process{proc(1, "systemd", hostNS, ""), proc(30, "umount", hostNS, "")}
	for i := range crowd {
		procs = append(procs, proc(1000+i, "sleep", hostNS, ""))
	}
	w.proc = &fakeProc{procs: procs, tables: map[uint32]string{hostNS: hostTable}, host: hostNS}
	p := &pinnerProc{fakeProc: w.proc}
	for i := range kernelThreads {
		p.kernel = append(p.kernel, proc(3000+i, "kworker/0:"+strconv.Itoa(i), hostNS, ""))
	}
	p.started, p.moves = map[[2]uint64]bool{}, map[int]event.Task{}
	w.sent = p.move
	for _, pr := range procs {
		p.started[[2]uint64{uint64(pr.PID), pr.StartTime}] = true
	}
	var src procfs.Proc = p
	opts := correlate.Options{LeakSettle: -1}
	if bound != boundNone {
		src = listingProc{p}
	}
	if bound == boundTasks {
		opts.Tasks = p.tasks
	}
	w.c = correlate.New(src, opts, func(f *finding.Finding) { w.findings = append(w.findings, f) })
	if err := w.c.Start(); err != nil {
		t.Fatal(err)
	}
	w.send(unshareEv(20, "app", hostNS, 80))
	w.proc.procs = append(w.proc.procs, proc(20, "app", 80, ""), proc(22, "worker", 80, ""))
	w.proc.tables[80] = "110 109 254:0 / / rw - ext4 /dev/vda rw\n111 110 0:77 /pods/a /srv/src rw - tmpfs tmpfs rw\n" +
		"112 110 0:78 /pods/b /srv/other rw - tmpfs tmpfs rw\n" +
		"113 110 0:79 /pods/c /srv/third rw - tmpfs tmpfs rw\n"
	w.send(exitEv(21, "true", 80)) // the holder's table is read
	// A first failure reads the process list (the holder is known from
	// its unshare alone): the one the failure under test finds.
	w.send(umountEv(30, "umount", hostNS, "/srv/other", -int64(unix.EINVAL)))
	if len(w.findings) != 1 {
		t.Fatalf("%d findings of the first failure, want 1", len(w.findings))
	}
	return w, p
}

// fail is the failure the bench makes: umount2 EINVAL in the host of a
// directory that is a mount point only in the holder namespace.
func (w *world) fail() *finding.Finding {
	w.t.Helper()
	w.findings = nil
	w.send(umountEv(30, "umount", hostNS, "/srv/src", -int64(unix.EINVAL)))
	return w.only()
}

var tmpfs77 = event.MakeDev(0, 77)

// kernelThreads is the number of the kernel's threads of boundWorld's
// node, as many as this machine has (kthreadd's children).
const kernelThreads = 60

// A failure on a copy in holder namespaces reads the namespace links of
// the holder namespaces' members, the processes the lineage does not know
// and those a thread of which moved, not every process's; and names the
// same pins as the search of every process.
func TestFailureReadsAFewProcesses(t *testing.T) {
	const crowd = 300
	for _, tc := range []struct {
		name   string
		setup  func(w *world)
		links  int // at most, with the lineage's bound
		pinner string
	}{
		{"the holder pins it", func(w *world) {
			w.proc.pins = []procfs.Pin{{Process: proc(20, "app", 80, ""), Kind: procfs.PinCwd, Dev: tmpfs77, Path: "/srv/src/x"}}
		}, 2, "app[20] cwd /srv/src/x"},
		{"a process forked into the holder namespace since the last list pins it", func(w *world) {
			w.proc.procs = append(w.proc.procs, proc(70, "forked", 80, ""))
			w.proc.pins = []procfs.Pin{{Process: proc(70, "forked", 80, ""), Kind: procfs.PinFD, Dev: tmpfs77, Path: "/srv/src/f"}}
		}, 3, "forked[70] fd /srv/src/f"},
		{"a thread that joined the holder namespace since the last list pins it by its cwd", func(w *world) {
			setns := base(event.KindSetns, 1005, "sleep", 80, 308, 0)
			setns.TID, setns.MntNSBefore, setns.MntNSAfter = 1006, hostNS, 80
			w.send(setns)
			i := slices.IndexFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 1005 })
			w.proc.procs[i].Threads = []procfs.Thread{{TID: 1006, MntNS: 80}}
			w.proc.pins = []procfs.Pin{{Process: w.proc.procs[i], Kind: procfs.PinCwd, Dev: tmpfs77, Path: "/srv/src/t", TID: 1006}}
		}, 3, "sleep[1005] thread 1006 cwd /srv/src/t"},
		{"the main thread left the holder namespace, a sibling thread stays there and pins it", func(w *world) {
			setns := base(event.KindSetns, 22, "worker", hostNS, 308, 0)
			setns.MntNSBefore, setns.MntNSAfter = 80, hostNS
			w.send(setns)
			i := slices.IndexFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 22 })
			w.proc.procs[i].MntNS, w.proc.procs[i].Threads = hostNS, []procfs.Thread{{TID: 23, MntNS: 80}}
			w.proc.pins = []procfs.Pin{{Process: w.proc.procs[i], Kind: procfs.PinCwd, Dev: tmpfs77, Path: "/srv/src/m", TID: 23}}
		}, 2, "worker[22] thread 23 cwd /srv/src/m"},
		{"a process of a second holder namespace pins it", secondHolderPins, 3, "app2[25] cwd /srv/src/y"},
		{"the main thread unshared out of the holder namespace, a sibling thread stays there and pins it", unsharedOut, 2, "worker[22] thread 23 cwd /srv/src/m"},
		{"a thread that entered another namespace from one the kernel did not say is not read", enteredFromUnsaid, 2, "app[20] cwd /srv/src/x"},
		{"a pid reused after a traced exit", reusedAfterExit(hostNS), 3, "reused[1009] cwd /srv/src/r"},
		// An exit that names another namespace than the lineage has the
		// process in leaves it a member there: its pid is not known all
		// the same.
		{"a pid reused after a traced exit from a namespace the lineage did not place it in", reusedAfterExit(99), 3, "reused[1009] cwd /srv/src/r"},
		{"events lost since the last list: every process", func(w *world) {
			w.send(&event.Event{Kind: event.KindLost, Lost: 3, SyscallNr: -1})
			w.proc.pins = []procfs.Pin{{Process: proc(20, "app", 80, ""), Kind: procfs.PinCwd, Dev: tmpfs77, Path: "/srv/src/x"}}
		}, -1, "app[20] cwd /srv/src/x"},
		{"events lost, then a process list read: a few processes again", func(w *world) {
			w.send(&event.Event{Kind: event.KindLost, Lost: 3, SyscallNr: -1})
			w.now = w.now.Add(time.Minute) // the next failure reads the list again
			w.send(umountEv(30, "umount", hostNS, "/srv/third", -int64(unix.EINVAL)))
			w.proc.pins = []procfs.Pin{{Process: proc(20, "app", 80, ""), Kind: procfs.PinCwd, Dev: tmpfs77, Path: "/srv/src/x"}}
		}, 2, "app[20] cwd /srv/src/x"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var lines [3]string
			var links [3]int
			for _, bound := range []boundBy{boundNone, boundList, boundTasks} {
				w, p := boundWorld(t, crowd, bound)
				tc.setup(w)
				p.links, p.scans, p.listings = 0, 0, 0
				f := w.fail()
				lines[bound], links[bound] = f.Line(), p.links
				t.Logf("%s: %d links\n%s", bound, links[bound], lines[bound])
				if p.scans != 0 {
					t.Errorf("%s: a failure searched every process's files %d times, want none (only the holder namespaces')", bound, p.scans)
				}
				if bound == boundTasks && p.listings != 0 {
					t.Errorf("%s: a failure listed /proc %d times, want none", bound, p.listings)
				}
			}
			for _, bound := range []boundBy{boundList, boundTasks} {
				if lines[bound] != lines[boundNone] {
					t.Errorf("bounded by %s, the finding differs from the full search's", bound)
				}
				if !strings.Contains(lines[bound], tc.pinner) {
					t.Errorf("bounded by %s, the finding does not name %q", bound, tc.pinner)
				}
				if tc.links < 0 && links[bound] != links[boundNone] {
					t.Errorf("bounded by %s, a failure read %d processes' links, want every process's (%d)", bound, links[bound], links[boundNone])
				}
				if tc.links >= 0 && links[bound] > tc.links {
					t.Errorf("bounded by %s, a failure read %d processes' links on a node of %d, want at most %d", bound, links[bound], crowd+4+kernelThreads, tc.links)
				}
			}
		})
	}
}

// reusedAfterExit: the crowd's sleep[1009] exits (its exit names exitNS)
// and a process forked into the holder namespace gets its pid and pins
// the copy by its cwd.
func reusedAfterExit(exitNS uint32) func(*world) {
	return func(w *world) {
		w.send(exitEv(1009, "sleep", exitNS))
		i := slices.IndexFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 1009 })
		w.proc.procs[i] = proc(1009, "reused", 80, "")
		w.proc.procs[i].StartTime = 99999
		w.proc.pins = []procfs.Pin{{Process: w.proc.procs[i], Kind: procfs.PinCwd, Dev: tmpfs77, Path: "/srv/src/r"}}
	}
}

// secondHolderPins: app2[25] unshares mnt:[81] with the same copies as
// mnt:[80], and pins the copy at /srv/src by its cwd.
func secondHolderPins(w *world) {
	w.send(unshareEv(25, "app2", hostNS, 81))
	w.proc.procs = append(w.proc.procs, proc(25, "app2", 81, ""))
	w.proc.tables[81] = w.proc.tables[80]
	w.send(exitEv(26, "true", 81)) // its table is read
	w.proc.pins = []procfs.Pin{{Process: proc(25, "app2", 81, ""), Kind: procfs.PinCwd, Dev: tmpfs77, Path: "/srv/src/y"}}
}

// unsharedOut: worker[22]'s main thread unshares out of the holder
// namespace (into mnt:[82]) and unmounts its copy of /srv/src there, so
// the holder is mnt:[80] alone, of which worker[22] is no member now; its
// sibling thread 23 stays in mnt:[80] and pins the copy by its cwd.
func unsharedOut(w *world) {
	i := slices.IndexFunc(w.proc.procs, func(p procfs.Process) bool { return p.PID == 22 })
	w.proc.procs[i].MntNS, w.proc.procs[i].Threads = 82, []procfs.Thread{{TID: 23, MntNS: 80}}
	w.proc.tables[82] = strings.Replace(w.proc.tables[80], "111 110 0:77 /pods/a /srv/src rw - tmpfs tmpfs rw\n", "", 1)
	w.send(unshareEv(22, "worker", 80, 82), umountEv(22, "worker", 82, "/srv/src", 0))
	w.proc.pins = []procfs.Pin{{Process: w.proc.procs[i], Kind: procfs.PinCwd, Dev: tmpfs77, Path: "/srv/src/m", TID: 23}}
}

// enteredFromUnsaid: a thread of the crowd's sleep[1005] enters another
// namespace (mnt:[85]) by a setns that does not say where it was: the
// kernel side knows that only for threads it saw forked, the lineage
// knows it (the host), so the process is no candidate in mnt:[80]. The
// holder pins the copy.
func enteredFromUnsaid(w *world) {
	setns := base(event.KindSetns, 1005, "sleep", 85, 308, 0)
	setns.TID, setns.MntNSAfter = 1006, 85
	w.send(setns)
	w.proc.pins = []procfs.Pin{{Process: proc(20, "app", 80, ""), Kind: procfs.PinCwd, Dev: tmpfs77, Path: "/srv/src/x"}}
}

// TestKernelThreadReadOnlyWhereItMayBe: a failure's pin search reads no
// link of a kernel thread the last process list showed outside the holder
// namespaces (TestFailureReadsAFewProcesses: none of boundWorld's), but
// one that list showed in a holder namespace (the kernel's devtmpfs
// thread has one of its own); and a pid a kernel thread had before its
// traced exit is a process the lineage does not know: its pin is named.
func TestKernelThreadReadOnlyWhereItMayBe(t *testing.T) {
	t.Run("in a holder namespace", func(t *testing.T) {
		w, p := boundWorld(t, 10, boundList)
		p.kernel[5].MntNS = 80
		w.now = w.now.Add(time.Minute) // the next failure reads the list again
		w.send(umountEv(30, "umount", hostNS, "/srv/third", -int64(unix.EINVAL)))
		p.links = 0
		w.fail()
		if p.links != 3 {
			t.Errorf("read %d links, want 3: app[20], worker[22] and the kernel thread", p.links)
		}
	})
	t.Run("its pid reused after its exit", func(t *testing.T) {
		w, p := boundWorld(t, 10, boundList)
		w.send(exitEv(3005, "kworker/0:5", hostNS))
		reused := proc(3005, "reused", 80, "")
		p.kernel = slices.Delete(p.kernel, 5, 6)
		w.proc.procs = append(w.proc.procs, reused)
		w.proc.pins = []procfs.Pin{{Process: reused, Kind: procfs.PinCwd, Dev: tmpfs77, Path: "/srv/src/k"}}
		p.links = 0
		f := w.fail()
		if got, want := pinsOf(f), "mnt:[80] reused[3005] cwd /srv/src/k"; got != want {
			t.Errorf("pins %q, want %q", got, want)
		}
		if p.links != 3 {
			t.Errorf("read %d links, want 3: app[20], worker[22] and reused[3005]", p.links)
		}
	})
}
