package daemon

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	"go.uber.org/zap"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/kmount"
	"github.com/mntleak/mntleak/internal/logkey"
)

// maxWatched bounds the namespaces watched at once (two descriptors each
// while a mark is made, one after): beyond it a namespace is left to the
// re-reads, as on a kernel without the marks.
const maxWatched = 4096

// groupsFile is the kernel's limit on one user's fanotify groups: every
// program of root's on the node (an audit daemon, fapolicyd, another
// tracer) draws on the same 128 by default.
const groupsFile = "/proc/sys/fs/fanotify/max_user_groups"

// groupBudget is how many fanotify groups the watch may hold, given the
// user's limit (limit <= 0: not known): half of it, so the other
// programs of root's on the node keep the other half, and at most
// maxWatched.
func groupBudget(limit int) int {
	if limit <= 0 {
		limit = 128 // the kernel's default
	}
	return min(limit/2, maxWatched)
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
// happens. An event names no namespace, and a detached mount can no
// longer be described, so each namespace has a group of its own, all
// under one epoll, and each group the mountinfo id, device and point of
// every mount of its namespace by unique id (listed when the mark is
// made, kept by the events since). The node's own namespace is not
// watched: the tracer sees what happens in it. Not safe for concurrent
// use: the pipeline's goroutine alone uses it.
type mountWatch struct {
	ep     int
	host   uint32
	groups map[uint32]*nsGroup // by namespace inode
	byFD   map[int32]uint32    // group descriptor -> namespace inode
	ready  []unix.EpollEvent
	buf    []byte // statmount's
	log    *zap.Logger
	said   []event.MountNote // watch notes (event.WatchOn, WatchOff) the next drain returns first
	// budget is how many groups the watch may hold (groupBudget): the
	// rest of the user's fanotify groups are left to other programs.
	budget     int
	saidBudget bool // the budget's being spent was logged (once)
	// full: fanotify_init refused another group (EMFILE: the user's
	// fs.fanotify.max_user_groups, 128 by default, is shared with every
	// fanotify user of root's), or the budget is spent; no namespace is
	// tried again until a group is dropped.
	full bool
}

// nsGroup is one namespace's group and what it knows of its mounts.
type nsGroup struct {
	w      *kmount.Watch
	id     uint64 // NS_GET_MNTNS_ID
	mounts map[uint64]knownMount
}

// knownMount is what a detach note needs of a mount: what the ledger's
// table shows of it.
type knownMount struct {
	id, parent int // mountinfo's
	dev        event.Dev
	point      string
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
	return &mountWatch{ep: ep, host: host, groups: map[uint32]*nsGroup{}, byFD: map[int32]uint32{},
		ready: make([]unix.EpollEvent, 64), log: log, budget: groupBudget(readGroupLimit())}, nil
}

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

// sync watches every live namespace with a process to open it through
// and drops the groups of those no longer live.
func (mw *mountWatch) sync(live []*correlate.Namespace) {
	alive := make(map[uint32]bool, len(live))
	for _, n := range live {
		alive[n.Ino] = true
		if n.Ino == mw.host || mw.groups[n.Ino] != nil || mw.full {
			continue
		}
		if len(mw.groups) >= mw.budget {
			mw.full = true
			if mw.saidBudget {
				continue
			}
			mw.saidBudget = true
			mw.log.Info("mount notes: the fanotify groups the daemon may hold are in use (half of fs.fanotify.max_user_groups, the rest left to other programs); the other namespaces' tables are re-read",
				zap.Int("watched", len(mw.groups)))
			continue
		}
		var last error
		for _, m := range n.Members() {
			if last = mw.watch(n.Ino, m.Enter()); last == nil || errors.Is(last, unix.EMFILE) {
				break
			}
		}
		if errors.Is(last, unix.EMFILE) {
			mw.full = true
			mw.log.Info("mount notes: no more fanotify groups (fs.fanotify.max_user_groups); the other namespaces' tables are re-read",
				zap.Int("watched", len(mw.groups)))
			continue
		}
		if last != nil {
			mw.log.Debug("mount notes: namespace not watched", zap.Uint32(logkey.MntNS, n.Ino), zap.Error(last))
		}
	}
	for ino := range mw.groups {
		if !alive[ino] {
			mw.drop(ino)
		}
	}
}

// watch marks namespace ino through process pid, then lists its mounts:
// marked first, a mount attached meanwhile is in both, none is missed.
func (mw *mountWatch) watch(ino uint32, pid int) error {
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
	w, err := kmount.NewWatch()
	if err != nil {
		return err
	}
	g := &nsGroup{w: w, id: id, mounts: map[uint64]knownMount{}}
	if err := w.AddFD(fd); err != nil {
		w.Close()
		return fmt.Errorf("%w of %s", err, file)
	}
	table, err := kmount.Table(id)
	if err != nil {
		w.Close()
		return err
	}
	for _, m := range table {
		g.mounts[m.ID] = known(m)
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(w.FD())}
	if err := unix.EpollCtl(mw.ep, unix.EPOLL_CTL_ADD, w.FD(), &ev); err != nil {
		w.Close()
		return fmt.Errorf("epoll_ctl add the group of %s: %w", file, err)
	}
	mw.groups[ino], mw.byFD[int32(w.FD())] = g, ino
	mw.said = append(mw.said, event.MountNote{NS: ino, Watch: event.WatchOn})
	return nil
}

// drop closes ns's group (its mark goes with it).
func (mw *mountWatch) drop(ino uint32) {
	g := mw.groups[ino]
	if g == nil {
		return
	}
	fd := g.w.FD()
	_ = unix.EpollCtl(mw.ep, unix.EPOLL_CTL_DEL, fd, nil)
	delete(mw.byFD, int32(fd))
	delete(mw.groups, ino)
	g.w.Close()
	mw.full = false
	mw.said = append(mw.said, event.MountNote{NS: ino, Watch: event.WatchOff})
}

// drain returns the notes the kernel queued so far, without waiting, each
// stamped now: a group with events, in the order the kernel queued them.
// The kernel queues an event before the call that caused it returns, so
// the notes of a call whose tracer event the pipeline holds are here.
func (mw *mountWatch) drain(now time.Time) ([]event.MountNote, error) {
	notes := mw.said
	mw.said = nil
	for i := range notes {
		notes[i].Time = now
	}
	var errs []error
	for {
		n, err := unix.EpollWait(mw.ep, mw.ready, 0)
		if errors.Is(err, unix.EINTR) {
			continue
		}
		if err != nil {
			return notes, fmt.Errorf("epoll_wait on the mount notes: %w", err)
		}
		for _, r := range mw.ready[:n] {
			ino := mw.byFD[r.Fd]
			if g := mw.groups[ino]; g != nil {
				got, err := mw.notesOf(ino, g, now)
				notes = append(notes, got...)
				if err != nil {
					// A note may be lost (the queue overflowed, a mount
					// could not be described): the table is no longer
					// kept true; the next sync watches it afresh.
					errs = append(errs, err)
					mw.drop(ino)
					notes = append(notes, mw.said...)
					mw.said = nil
					notes[len(notes)-1].Time = now
				}
			}
		}
		if n < len(mw.ready) {
			return notes, errors.Join(errs...)
		}
	}
}

// notesOf reads one group's events: an attach described by statmount
// (one detached again before, ENOENT, is left out: its detach follows),
// a detach as the group knew the mount.
func (mw *mountWatch) notesOf(ino uint32, g *nsGroup, now time.Time) ([]event.MountNote, error) {
	evs, err := g.w.Read()
	if err != nil {
		err = fmt.Errorf("mnt:[%d]: %w", ino, err)
	}
	var out []event.MountNote
	for _, ev := range evs {
		note := event.MountNote{Time: now, NS: ino, Detach: ev.Detach, PID: uint32(ev.PID)}
		if ev.Moved {
			// Told as a move, not as what it did to the moved mount's
			// children: the tracer's move event makes the table stale
			// (correlate: notedKind); only the point is kept.
			m, buf, serr := kmount.Stat(g.id, ev.Mount, mw.buf)
			mw.buf = buf
			if serr == nil {
				g.mounts[m.ID] = known(m)
			}
			continue
		}
		if ev.Detach {
			k, ok := g.mounts[ev.Mount]
			if !ok {
				continue
			}
			delete(g.mounts, ev.Mount)
			note.Mount = &mountinfo.Info{ID: k.id, Parent: k.parent, Major: int(k.dev.Major()), Minor: int(k.dev.Minor()), Mountpoint: k.point}
		} else {
			var m kmount.Mount
			var serr error
			m, mw.buf, serr = kmount.Stat(g.id, ev.Mount, mw.buf)
			if errors.Is(serr, unix.ENOENT) {
				continue
			}
			if serr != nil {
				err = errors.Join(err, serr)
				continue
			}
			g.mounts[m.ID] = known(m)
			note.Mount = infoOf(m)
		}
		out = append(out, note)
	}
	return out, err
}

// known is what a detach will need of m.
func known(m kmount.Mount) knownMount {
	return knownMount{id: m.OldID, parent: m.OldParent, dev: m.Dev, point: m.Point}
}

// The mount attributes and superblock flags statmount reports (uapi
// values), and the words /proc/PID/mountinfo shows for them, in its order.
const (
	mountAttrRdonly   = 0x1
	mountAttrAtime    = 0x70 // the atime field: relatime 0, noatime 0x10, strictatime 0x20
	mountAttrNoatime  = 0x10
	mountAttrRelatime = 0x0
	sbRdonly          = 0x1
)

var (
	mountAttrWords = []struct {
		bit  uint64
		name string
	}{{0x2, "nosuid"}, {0x4, "nodev"}, {0x8, "noexec"}}
	mountAttrLater = []struct {
		bit  uint64
		name string
	}{{0x80, "nodiratime"}}
	sbWords = []struct {
		bit  uint32
		name string
	}{{0x10, "sync"}, {0x80, "dirsync"}, {0x40, "mand"}, {1 << 25, "lazytime"}}
)

// infoOf is m as /proc/PID/mountinfo would show it, but for the source:
// statmount gives it only from 6.13 on, and no rule reads it of a mount
// in a holder's table.
func infoOf(m kmount.Mount) *mountinfo.Info {
	opts := []string{"rw"}
	if m.Attr&mountAttrRdonly != 0 {
		opts[0] = "ro"
	}
	for _, a := range mountAttrWords {
		if m.Attr&a.bit != 0 {
			opts = append(opts, a.name)
		}
	}
	if m.Attr&mountAttrAtime == mountAttrNoatime {
		opts = append(opts, "noatime")
	}
	for _, a := range mountAttrLater {
		if m.Attr&a.bit != 0 {
			opts = append(opts, a.name)
		}
	}
	if m.Attr&mountAttrAtime == mountAttrRelatime {
		opts = append(opts, "relatime")
	}
	vfs := []string{"rw"}
	if m.SBFlags&sbRdonly != 0 {
		vfs[0] = "ro"
	}
	for _, f := range sbWords {
		if m.SBFlags&f.bit != 0 {
			vfs = append(vfs, f.name)
		}
	}
	if m.Opts != "" {
		vfs = append(vfs, m.Opts)
	}
	var optional []string
	if m.Prop&unix.MS_SHARED != 0 {
		optional = append(optional, "shared:"+strconv.FormatUint(m.Peer, 10))
	}
	if m.Prop&unix.MS_SLAVE != 0 {
		optional = append(optional, "master:"+strconv.FormatUint(m.Master, 10))
	}
	if m.Prop&unix.MS_UNBINDABLE != 0 {
		optional = append(optional, "unbindable")
	}
	return &mountinfo.Info{ID: m.OldID, Parent: m.OldParent, Major: int(m.Dev.Major()), Minor: int(m.Dev.Minor()),
		Root: m.Root, Mountpoint: m.Point, Options: strings.Join(opts, ","), Optional: strings.Join(optional, " "),
		FSType: m.FSType, VFSOptions: strings.Join(vfs, ",")}
}
