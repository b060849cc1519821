package release

import (
	"fmt"

	"github.com/mntleak/mntleak/internal/nsthread"
)

// Apply detaches one planned copy, on a thread of its own that enters the
// namespace (nsthread.Run: never the main thread, ended afterwards; the
// process stays where it is). Under the copy's lock it proves again, from
// the kernel's state at that moment, that the namespace is the one planned
// (its birth id), that the copy is the one planned (its unique id, mount
// id, mount point and device) and that it is a leak; it detaches exactly
// that mount and checks it is gone. lockDir is LockDir but in tests.
func (c Checker) Apply(s Step, lockDir string) error {
	return nsthread.Run(func() error { return c.applyHere(s, lockDir) })
}

func (c Checker) applyHere(s Step, lockDir string) error {
	k := c.kernel()
	if s.NSID == 0 || s.Unique == 0 {
		return &NotLeak{fmt.Sprintf("the step for mount %d in mnt:[%d] carries no identities: it was not proven", s.MountID, s.MntNS)}
	}
	fd, ino, id, err := k.OpenNS(s.Enter)
	if err != nil {
		return err
	}
	defer k.Close(fd)
	if ino != s.MntNS || id != s.NSID {
		return &NotLeak{fmt.Sprintf("changed since the plan: %s is mnt:[%d] born with id %d now, not mnt:[%d] id %d", s.Enter, ino, id, s.MntNS, s.NSID)}
	}
	lock, err := lockCopy(lockDir, s.NSID, s.Unique)
	if err != nil {
		return err
	}
	defer lock.unlock()
	p, err := c.prove(ino, id, s.Unique)
	if err != nil {
		if prev, ok := lock.previous(); ok {
			return &NotLeak{prev.String()}
		}
		return err
	}
	if m := p.Copy; m.OldID != s.MountID || m.Point != s.Where || (s.Dev != 0 && m.Dev != s.Dev) {
		return &NotLeak{fmt.Sprintf("changed since the plan: unique mount %d is mount %d at %s on %s now, not %d at %s on %s", s.Unique, m.OldID, m.Point, m.Dev, s.MountID, s.Where, s.Dev)}
	}
	// The caller's /proc, opened before the thread moves: the act names
	// the mount through it (the namespace's own /proc may be another pid
	// namespace's, or none).
	proc, err := k.OpenProc()
	if err != nil {
		return err
	}
	defer k.Close(proc)
	if err := k.Enter(fd, s.MntNS); err != nil {
		return err
	}
	lock.begin(Record{MntNS: s.MntNS, NSID: s.NSID, MountID: s.MountID, Unique: s.Unique, Where: s.Where, Dev: p.Copy.Dev})
	if err := detachExactly(k, s, proc); err != nil {
		lock.abort()
		return err
	}
	lock.done()
	mounts, err := k.ReadTable(id)
	if err != nil {
		return err
	}
	for _, m := range mounts {
		if m.ID == s.Unique {
			return fmt.Errorf("mount %d at %s is still in mnt:[%d] after the unmount", s.MountID, s.Where, s.MntNS)
		}
	}
	return nil
}

// detachExactly detaches the mount with the step's unique id and no
// other: it opens the top mount at the mount point (a directory or a
// file), checks its unique id (statx STATX_MNT_ID_UNIQUE), and detaches
// it by that open file (thread-self/fd/N under the caller's /proc, the
// thread's cwd for the call), never by its path again, which a mount
// stacked on it since would answer.
func detachExactly(k kernelActs, s Step, proc int) error {
	fd, unique, ok, err := k.TopMount(s.Where, s.MntNS)
	if err != nil {
		return err
	}
	defer k.Close(fd)
	if !ok {
		return errNoUniqueID
	}
	if unique != s.Unique {
		return &NotLeak{fmt.Sprintf("changed since the plan: the top mount at %s in mnt:[%d] is unique mount %d, not %d", s.Where, s.MntNS, unique, s.Unique)}
	}
	return k.Detach(proc, fd, s.Where, s.MntNS)
}
