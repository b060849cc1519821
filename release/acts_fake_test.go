package release

import (
	"errors"
	"fmt"
	"slices"

	"github.com/mntleak/mntleak/event"
)

// fakeKernel answers release's kernel acts from tables made by a test:
// namespace files by path, tables by birth id. It records the acts in
// order (enter, top, detach) and, on a detach, takes the mount away from
// the table it is in (unless keep).
type fakeKernel struct {
	files  map[string][2]uint64 // file → inode, birth id
	tables map[uint64][]Mount
	runs   map[uint32]uint32 // pid → namespace inode
	// Errors of the acts, and answers of TopMount.
	openErr, readErr, procErr, enterErr, topErr, detachErr error
	readAfter                                              error // ReadTable's error once a mount was detached
	top                                                    uint64
	noUnique, keep                                         bool
	acts                                                   []string
	open                                                   int // fds open, less those closed
	enteredNS                                              uint32
}

func (f *fakeKernel) OpenNS(alternatives string) (int, uint32, uint64, error) {
	if f.openErr != nil {
		return -1, 0, 0, f.openErr
	}
	for _, file := range splitBar(alternatives) {
		if ns, ok := f.files[file]; ok {
			f.open++
			return 100 + f.open, uint32(ns[0]), ns[1], nil
		}
	}
	return -1, 0, 0, fmt.Errorf("open %s: no such file", alternatives)
}

func (f *fakeKernel) Close(int) { f.open-- }

func (f *fakeKernel) ReadTable(id uint64) ([]Mount, error) {
	if f.readErr != nil {
		return nil, f.readErr
	}
	if f.readAfter != nil && slices.Contains(f.acts, "detach") {
		return nil, f.readAfter
	}
	t, ok := f.tables[id]
	if !ok {
		return nil, fmt.Errorf("listmount in namespace %d: no such namespace", id)
	}
	return slices.Clone(t), nil
}

func (f *fakeKernel) RunsIn(pid, ino uint32) bool { return f.runs[pid] == ino }

func (f *fakeKernel) OpenProc() (int, error) {
	if f.procErr != nil {
		return -1, f.procErr
	}
	f.open++
	return 3, nil
}

func (f *fakeKernel) Enter(_ int, ns uint32) error {
	f.acts = append(f.acts, "enter")
	if f.enterErr != nil {
		return f.enterErr
	}
	f.enteredNS = ns
	return nil
}

func (f *fakeKernel) TopMount(string, uint32) (int, uint64, bool, error) {
	f.acts = append(f.acts, "top")
	if f.topErr != nil {
		return -1, 0, false, f.topErr
	}
	f.open++
	return 200, f.top, !f.noUnique, nil
}

func (f *fakeKernel) Detach(_, _ int, _ string, _ uint32) error {
	f.acts = append(f.acts, "detach")
	if f.detachErr != nil {
		return f.detachErr
	}
	if f.keep {
		return nil
	}
	for id, t := range f.tables {
		f.tables[id] = slices.DeleteFunc(t, func(m Mount) bool { return m.ID == f.top })
	}
	return nil
}

// errFake is an act's failure.
var errFake = errors.New("the act failed")

// leakWorld is a host (mnt:[1], birth id 4) that unmounted /srv/vol, and
// a holder (mnt:[9], id 50, entered through /proc/77/ns/mnt) made by
// unshare before that: its batch of copies has /srv/vol (unique 202, mount
// 102) and a newer copy of /run, the witness that 202 was copied. step is
// the planned release of that copy, its identities bound.
func leakWorld() (*fakeKernel, Step) {
	root := Mount{ID: 100, OldID: 20, Dev: event.MakeDev(254, 0), Point: "/", Root: "/", FSType: "ext4"}
	run := Mount{ID: 104, OldID: 24, Parent: 100, Dev: event.MakeDev(0, 41), Point: "/run", Root: "/", FSType: "tmpfs"}
	copyOf := func(m Mount, id, parent uint64) Mount {
		m.ID, m.OldID, m.Parent = id, int(id)-100, parent
		return m
	}
	vol := Mount{ID: 202, OldID: 102, Parent: 200, Dev: event.MakeDev(0, 38), Point: "/srv/vol", Root: "/", FSType: "tmpfs"}
	f := &fakeKernel{
		files: map[string][2]uint64{"/proc/1/ns/mnt": {1, 4}, "/proc/self/ns/mnt": {1, 4}, "/proc/77/ns/mnt": {9, 50}},
		tables: map[uint64][]Mount{
			4:  {root, run},
			50: {copyOf(root, 200, 199), vol, copyOf(run, 204, 200)},
		},
		runs: map[uint32]uint32{77: 9},
		top:  202,
	}
	return f, Step{MntNS: 9, MountID: 102, Where: "/srv/vol", Dev: vol.Dev, Enter: "/proc/77/ns/mnt", NSID: 50, Unique: 202}
}
