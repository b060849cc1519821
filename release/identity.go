package release

import (
	"errors"
	"fmt"
	"strconv"

	"golang.org/x/sys/unix"
)

// Checker proves a step's copy is a leak from the kernel's live state:
// the tables of the holder and of the namespaces a copy comes from (the
// host's and the caller's), and the daemon's ledger when there is one.
type Checker struct {
	// Origins are the files of the origin namespaces (default: the
	// host's, through pid 1 or kthreadd, and the caller's).
	Origins []string
	// Ledger is the daemon's record of this boot; nil without a state dir.
	Ledger *Ledger
	// Verdict is the correlator's leak verdict, re-derived at this run
	// from the ledger and live state (not inferred from /proc alone), or
	// "": with the ledger's record of the namespace's birth it proves a
	// copy the ledger's unmounts do not name (a recursive bind's).
	Verdict string
	// FailedUnmount is the failed unmount a busy-copy finding the daemon
	// kept reports (checked against its state dir), or "".
	FailedUnmount string
	// acts are the kernel calls (nil: the live kernel's); a test's fake.
	acts kernelActs
	// locks is where Identify looks for the records of earlier releases
	// ("": LockDir); a test's directory.
	locks string
}

func (c Checker) lockDir() string {
	if c.locks != "" {
		return c.locks
	}
	return LockDir
}

// originFiles are the namespace files of the host (pid 1's, or
// kthreadd's where pid 1 cannot be read) and of the calling process.
func (c Checker) originFiles() []string {
	if len(c.Origins) > 0 {
		return c.Origins
	}
	return []string{"/proc/1/ns/mnt|/proc/2/ns/mnt", "/proc/self/ns/mnt"}
}

// openNS opens the first of a|b|... that opens: a namespace file, with
// its inode and birth id.
func openNS(alternatives string) (int, uint32, uint64, error) {
	var err error
	for _, file := range splitBar(alternatives) {
		var fd int
		if fd, err = unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0); err != nil {
			err = fmt.Errorf("open %s: %w", file, err)
			continue
		}
		var st unix.Stat_t
		if err = unix.Fstat(fd, &st); err != nil {
			unix.Close(fd)
			return -1, 0, 0, fmt.Errorf("stat %s: %w", file, err)
		}
		id, err := nsIDOf(fd)
		if err != nil {
			unix.Close(fd)
			return -1, 0, 0, fmt.Errorf("%s: %w", file, err)
		}
		return fd, uint32(st.Ino), id, nil
	}
	return -1, 0, 0, err
}

func splitBar(s string) []string {
	var out []string
	start := 0
	for i := 0; i <= len(s); i++ {
		if i == len(s) || s[i] == '|' {
			out = append(out, s[start:i])
			start = i + 1
		}
	}
	return out
}

// tables reads the origins' tables, each namespace once.
func (c Checker) tables() ([]Table, error) {
	k := c.kernel()
	var out []Table
	seen := map[uint64]bool{}
	for _, alt := range c.originFiles() {
		fd, ino, id, err := k.OpenNS(alt)
		if err != nil {
			return nil, err
		}
		k.Close(fd)
		if seen[id] {
			continue
		}
		seen[id] = true
		mounts, err := k.ReadTable(id)
		if err != nil {
			return nil, err
		}
		out = append(out, Table{Ino: ino, ID: id, Mounts: mounts})
	}
	return out, nil
}

// prove reads the holder (born with id, at inode ino) and the origins now,
// and proves the copy with unique id copyID a leak.
func (c Checker) prove(ino uint32, id, copyID uint64) (Proof, error) {
	origins, err := c.tables()
	if err != nil {
		return Proof{}, err
	}
	k := c.kernel()
	mounts, err := k.ReadTable(id)
	if err != nil {
		return Proof{}, err
	}
	holder := Table{Ino: ino, ID: id, Mounts: mounts}
	ev := evidence{failedUnmount: c.FailedUnmount}
	if c.Ledger != nil {
		ev.ledger = func(m Mount) (string, bool) { return c.Ledger.Received(ino, id, m, c.Verdict, k.RunsIn) }
	}
	return proveLeak(holder, copyID, origins, ev)
}

// Identify binds a planned step to identities the kernel never reuses
// (the namespace's birth id, the mount's unique id) and proves its copy a
// leak; the step then carries the proof. Identities the step carries
// already (a plan's, given back) must be the live ones. A *NotLeak error
// refuses it.
func (c Checker) Identify(s *Step) error {
	k := c.kernel()
	fd, ino, id, err := k.OpenNS(s.Enter)
	if err != nil {
		return err
	}
	k.Close(fd)
	if ino != s.MntNS {
		return &NotLeak{fmt.Sprintf("%s names mnt:[%d] now, not mnt:[%d]", s.Enter, ino, s.MntNS)}
	}
	if s.NSID != 0 && id != s.NSID {
		return &NotLeak{ReusedInode(ino, id, s.Enter, s.NSID)}
	}
	mounts, err := k.ReadTable(id)
	if err != nil {
		return err
	}
	var unique uint64
	for _, m := range mounts {
		if m.OldID == s.MountID && m.Point == s.Where {
			unique = m.ID
		}
	}
	if s.Unique != 0 && unique != s.Unique {
		if prev, ok := released(c.lockDir(), id, s.Unique); ok {
			return &NotLeak{prev.String()}
		}
		if unique != 0 {
			return &NotLeak{fmt.Sprintf("mount %d at %s in mnt:[%d] (id %d) is unique mount %d now, not the planned %d: the mount id was reused", s.MountID, s.Where, ino, id, unique, s.Unique)}
		}
	}
	if unique == 0 {
		if prev, ok := ReleasedMount(c.lockDir(), id, s.MountID, s.Where); ok {
			return &NotLeak{prev.String()}
		}
		return &NotLeak{fmt.Sprintf("mnt:[%d] (id %d) has no mount %d at %s", ino, id, s.MountID, s.Where)}
	}
	p, err := c.prove(ino, id, unique)
	if err != nil {
		if prev, ok := released(c.lockDir(), id, unique); ok {
			return &NotLeak{prev.String()}
		}
		return err
	}
	if s.Dev != 0 && p.Copy.Dev != s.Dev {
		return &NotLeak{fmt.Sprintf("mount %d at %s is device %s, not the object's %s", s.MountID, s.Where, p.Copy.Dev, s.Dev)}
	}
	s.NSID, s.Unique, s.Proof = id, unique, p.String()
	s.Below = nil
	for _, m := range p.Below {
		s.Below = append(s.Below, m.Point)
	}
	return nil
}

// runsIn reports whether process pid runs in namespace mnt:[ino] now.
func runsIn(pid, ino uint32) bool {
	var st unix.Stat_t
	err := unix.Stat("/proc/"+strconv.FormatUint(uint64(pid), 10)+"/ns/mnt", &st)
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH) {
		return false // gone
	}
	if err != nil {
		return true // unreadable: it may run there
	}
	return uint32(st.Ino) == ino
}

// IsNotLeak reports whether err refuses a copy as not proven a leak.
func IsNotLeak(err error) bool {
	var nl *NotLeak
	return errors.As(err, &nl)
}

// ReusedInode is the refusal of namespace inode ino, born with id live
// (read through file), named with birth id want: another namespace has
// the inode now.
func ReusedInode(ino uint32, live uint64, file string, want uint64) string {
	return fmt.Sprintf("mnt:[%d] was born with id %d (read through %s), not the planned %d: the inode was reused", ino, live, file, want)
}
