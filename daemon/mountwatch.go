package daemon

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/kmount"
	"github.com/mntleak/mntleak/internal/logkey"
)

// maxWatched bounds the namespaces watched at once: beyond it a namespace
// is left to the re-reads, as on a kernel without the marks.
const maxWatched = 4096

// nsPerGroup is how many namespaces one fanotify group marks. An attach
// names no namespace, and statmount finds a mount only in the namespace
// it is asked about, so an attach in a shared group is described by
// asking its namespaces in turn: a bound on that, and on what a group's
// overflow costs (every namespace of the group is watched afresh).
const nsPerGroup = 16

// watchPerSync bounds the namespaces the start and each periodic sync
// (syncInterval of event time) mark: each costs a listing of its mounts
// (statmount of each) and a read of its table, and a sync runs on the
// event path: the daemon's start marked 300 namespaces in 100 ms, and 32
// a second held a failure behind them for up to 10 ms (the failure
// latency's p99 over the first seconds on a node of 300 namespaces: 6.7-7.7
// ms; 3.8-5.2 ms with 4 every 125 ms). The sync a namespace's creation
// makes marks that one alone (the newest). The rest wait, re-read as
// before meanwhile: 32 a second.
const watchPerSync = 4

// groupsFile is the kernel's limit on one user's fanotify groups: every
// program of root's on the node (an audit daemon, fapolicyd, another
// tracer) draws on the same 128 by default.
const groupsFile = "/proc/sys/fs/fanotify/max_user_groups"

// groupBudget is how many fanotify groups the watch may hold, given the
// user's limit (limit <= 0: not known): half of it, so the other
// programs of root's on the node keep the other half, and no more than
// maxWatched namespaces need.
func groupBudget(limit int) int {
	if limit <= 0 {
		limit = 128 // the kernel's default
	}
	return min(limit/2, maxWatched/nsPerGroup)
}

// readGroupLimit is groupsFile's value, 0 when it cannot be read.
func readGroupLimit() int {
	b, err := os.ReadFile(groupsFile)
	if err != nil {
		return 0
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return n
}

// mountWatch keeps the kernel's word on the mounts of the namespaces the
// correlator tracks (fanotify's mount-namespace marks, Linux 6.15+): a
// copy a host's rmdir detaches, a bind made in a holder, the moment it
// happens. A fanotify group marks up to nsPerGroup namespaces, all groups
// under one epoll; each namespace knows the mountinfo id, device and point
// of every mount of its by unique id (listed when the mark is made, kept
// by the events since): a detached mount can no longer be described, and
// an event names no namespace (the group's members are asked in turn). The node's own namespace is not watched: the tracer sees
// what happens in it. Not safe for concurrent use: the pipeline's
// goroutine alone uses it.
type mountWatch struct {
	ep     int
	host   uint32
	groups map[uint32]*nsGroup // by namespace inode
	fans   map[int32]*fanGroup // by group descriptor
	open   *fanGroup           // the group new marks go to while it has room; nil: a new one
	ready  []unix.EpollEvent
	buf    []byte // statmount's
	log    *zap.Logger
	said   []event.MountNote // watch notes (event.WatchOn, WatchOff) the next drain returns first
	gone   map[uint64]int    // notesOf's scratch: the mounts one read detaches, to the index of the last detach
	// budget is how many fanotify groups the watch may hold
	// (groupBudget): the rest of the user's are left to other programs.
	budget int
	// tasks is the tracer's tasks (correlate.Options.Tasks): a namespace
	// no known member of which answers is marked through one of them.
	// Nil: none.
	tasks      func() ([]event.Task, bool, error)
	saidBudget bool // the budget's being spent was logged (once)
	// full: fanotify_init refused another group (EMFILE: the user's
	// fs.fanotify.max_user_groups, 128 by default, is shared with every
	// fanotify user of root's), or the budget is spent; no namespace is
	// tried again until a namespace is dropped.
	full bool
}

// fanGroup is one fanotify group and the namespaces it marks.
type fanGroup struct {
	w *kmount.Watch
	// members are the watched namespaces marked in it, in the order they
	// were; a dropped one leaves (its mark stays until it dies or the
	// group closes: marking it off needs a file of it).
	members []uint32
	marks   int // marks made in it, dropped namespaces' too
}

// nsGroup is one watched namespace: its group and what it knows of its
// mounts.
type nsGroup struct {
	fan    *fanGroup
	ns     *correlate.Namespace // the lineage's, when it was marked
	id     uint64               // NS_GET_MNTNS_ID
	mounts mountSet
}

// newMountWatch returns the watch, or an error when the kernel has no
// mount-namespace marks (before 6.15: fanotify_init refuses
// FAN_REPORT_MNT) or no listmount by namespace id.
func newMountWatch(host uint32, log *zap.Logger) (*mountWatch, error) {
	probe, err := kmount.NewWatch()
	if err != nil {
		return nil, err
	}
	probe.Close()
	ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("epoll_create1: %w", err)
	}
	return &mountWatch{ep: ep, host: host, groups: map[uint32]*nsGroup{}, fans: map[int32]*fanGroup{},
		ready: make([]unix.EpollEvent, 64), log: log, budget: groupBudget(readGroupLimit())}, nil
}

// watched is how many namespaces are watched; 0 for nil.
func (mw *mountWatch) watched() int {
	if mw == nil {
		return 0
	}
	return len(mw.groups)
}

// saying reports whether notes of the watch's own (a namespace watched or
// no longer) wait for the next drain.
func (mw *mountWatch) saying() bool { return mw != nil && len(mw.said) > 0 }

// close closes every group and the epoll; nil: nothing.
func (mw *mountWatch) close() {
	if mw == nil {
		return
	}
	for ino := range mw.groups {
		mw.drop(ino)
	}
	unix.Close(mw.ep)
}

// sync drops the namespaces no longer live and watches at most most live
// ones more, newest first, each through a process in it.
func (mw *mountWatch) sync(live []*correlate.Namespace, most int) {
	alive := make(map[uint32]bool, len(live))
	var todo []*correlate.Namespace
	for _, n := range live {
		alive[n.Ino] = true
		if g := mw.groups[n.Ino]; g != nil && g.ns != n {
			// The lineage has a new namespace under the inode (the kernel
			// gives a dead namespace's inode to the next one made): the
			// one marked died, and its mark with it.
			mw.drop(n.Ino)
		}
		if n.Ino != mw.host && mw.groups[n.Ino] == nil {
			todo = append(todo, n)
		}
	}
	for ino := range mw.groups {
		if !alive[ino] {
			mw.drop(ino)
		}
	}
	// Newest first: a namespace just made is watched at once; one from
	// before the daemon's start may wait a sync or more.
	slices.SortStableFunc(todo, func(a, b *correlate.Namespace) int { return b.Created.Compare(a.Created) })
	var tasks []event.Task // read once, when a namespace needs them
	for i, n := range todo {
		if i == most || mw.full {
			break
		}
		if len(mw.groups) >= maxWatched || (!mw.open.hasRoom() && len(mw.fans) >= mw.budget) {
			mw.full = true
			if mw.saidBudget {
				continue
			}
			mw.saidBudget = true
			mw.log.Info("mount notes: the fanotify groups the daemon may hold are in use (half of fs.fanotify.max_user_groups, the rest left to other programs); the other namespaces' tables are re-read",
				zap.Int("watched", len(mw.groups)), zap.Int("groups", len(mw.fans)))
			continue
		}
		last := mw.mark(n, &tasks)
		if errors.Is(last, unix.EMFILE) {
			mw.full = true
			mw.log.Info("mount notes: no more fanotify groups (fs.fanotify.max_user_groups); the other namespaces' tables are re-read",
				zap.Int("watched", len(mw.groups)), zap.Int("groups", len(mw.fans)))
			continue
		}
		if last != nil {
			mw.log.Debug("mount notes: namespace not watched", zap.Uint32(logkey.MntNS, n.Ino), zap.Error(last))
		}
	}
}

// mark watches n through one of its members or, when none answers, through
// a task the tracer saw in it (runc's child makes a container's namespace
// and exits at once; the container's init, forked inside, sent no event,
// so the lineage knows no process in it). tasks holds the tracer's tasks
// once read (nil: not yet), for the other namespaces of the same sync.
// The error is the last try's; nil also when there was nothing to try.
func (mw *mountWatch) mark(n *correlate.Namespace, tasks *[]event.Task) error {
	var last error
	for _, m := range n.Members() {
		if last = mw.watch(n, m.Enter()); last == nil || errors.Is(last, unix.EMFILE) {
			return last
		}
	}
	if mw.tasks == nil {
		return last
	}
	if *tasks == nil {
		all, _, err := mw.tasks()
		if err != nil {
			return fmt.Errorf("the tracer's tasks: %w", err)
		}
		*tasks = append(make([]event.Task, 0, len(all)), all...)
	}
	for _, t := range *tasks {
		if t.MntNS != n.Ino {
			continue
		}
		if last = mw.watch(n, t.TID); last == nil || errors.Is(last, unix.EMFILE) {
			return last
		}
	}
	return last
}

// watch marks namespace n through process pid, then lists its mounts:
// marked first, a mount attached meanwhile is in both, none is missed.
func (mw *mountWatch) watch(n *correlate.Namespace, pid int) error {
	ino := n.Ino
	file := "/proc/" + strconv.Itoa(pid) + "/ns/mnt"
	fd, err := unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("open %s: %w", file, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("stat %s: %w", file, err)
	}
	if uint32(st.Ino) != ino {
		return fmt.Errorf("%s is mnt:[%d] now, not mnt:[%d]", file, st.Ino, ino)
	}
	id, err := kmount.NSID(fd)
	if err != nil {
		return fmt.Errorf("%s: %w", file, err)
	}
	fan, err := mw.roomy()
	if err != nil {
		return err
	}
	if err := fan.w.AddFD(fd); err != nil {
		mw.closeIfEmpty(fan)
		return fmt.Errorf("%w of %s", err, file)
	}
	fan.marks++
	table, err := kmount.Table(id)
	if err != nil {
		mw.closeIfEmpty(fan)
		return err
	}
	g := &nsGroup{fan: fan, ns: n, id: id, mounts: newMountSet(table)}
	fan.members = append(fan.members, ino)
	mw.groups[ino] = g
	mw.said = append(mw.said, event.MountNote{NS: ino, Watch: event.WatchOn})
	return nil
}

// roomy returns the group a new mark goes to: the open one while it has
// room, else a new one, under the epoll.
func (mw *mountWatch) roomy() (*fanGroup, error) {
	if mw.open.hasRoom() {
		return mw.open, nil
	}
	w, err := kmount.NewWatch()
	if err != nil {
		return nil, err
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(w.FD())}
	if err := unix.EpollCtl(mw.ep, unix.EPOLL_CTL_ADD, w.FD(), &ev); err != nil {
		w.Close()
		return nil, fmt.Errorf("epoll_ctl add a fanotify group: %w", err)
	}
	fan := &fanGroup{w: w}
	mw.fans[int32(w.FD())], mw.open = fan, fan
	return fan, nil
}

// hasRoom reports whether another namespace may be marked in fan (nil:
// no).
func (fan *fanGroup) hasRoom() bool { return fan != nil && fan.marks < nsPerGroup }

// drop stops watching ns: its group forgets its mounts, and closes once
// no watched namespace is left in it.
func (mw *mountWatch) drop(ino uint32) {
	g := mw.groups[ino]
	if g == nil {
		return
	}
	delete(mw.groups, ino)
	g.fan.members = slices.DeleteFunc(g.fan.members, func(m uint32) bool { return m == ino })
	mw.closeIfEmpty(g.fan)
	mw.full = false
	mw.said = append(mw.said, event.MountNote{NS: ino, Watch: event.WatchOff})
}

// closeIfEmpty closes fan when no watched namespace is left in it.
func (mw *mountWatch) closeIfEmpty(fan *fanGroup) {
	if len(fan.members) > 0 {
		return
	}
	fd := fan.w.FD()
	_ = unix.EpollCtl(mw.ep, unix.EPOLL_CTL_DEL, fd, nil)
	delete(mw.fans, int32(fd))
	if mw.open == fan {
		mw.open = nil
	}
	fan.w.Close()
}
