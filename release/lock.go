package release

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// LockDir holds one lock file per copy a release acts on; each keeps the
// record of the release that detached its copy (it is on /run: this boot).
const LockDir = "/run/mntleak/release"

// Record is what a release leaves in the lock file of the copy it acts on,
// before it detaches it: the copy, by its identities and where it was, and
// the releasing process; Released is set once the copy is gone (zero: the
// act is under way, or failed).
type Record struct {
	MntNS    uint32    `json:"mntns"`
	NSID     uint64    `json:"mntns_id"`
	MountID  int       `json:"mount_id"`
	Unique   uint64    `json:"unique_id"`
	Where    string    `json:"where"`
	Dev      event.Dev `json:"dev"`
	PID      int       `json:"pid"`
	Released time.Time `json:"released,omitzero"`
}

// String says which copy went and who took it: what a release that finds
// the copy gone says.
func (r Record) String() string {
	return fmt.Sprintf("mount %d (unique %d) at %s is gone from mnt:[%d] (id %d): released by mntleak[%d] at %s",
		r.MountID, r.Unique, r.Where, r.MntNS, r.NSID, r.PID, r.Released.UTC().Format(time.RFC3339Nano))
}

// copyLock is the exclusive lock of one copy, named by identities the
// kernel never reuses (the namespace's birth id, the mount's unique id):
// two releases of the same copy act one after the other, and the second,
// re-checking under the lock, finds the copy gone and reads who took it.
type copyLock struct {
	f *os.File
}

// lockCopy takes the lock of copy unique in the namespace born with id,
// waiting for another release holding it.
func lockCopy(dir string, id, unique uint64) (*copyLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("lock dir %s: %w", dir, err)
	}
	name := lockName(dir, id, unique)
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock %s: %w", name, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("lock %s: %w", name, err)
	}
	return &copyLock{f: f}, nil
}

// lockName is the lock file of copy unique in the namespace born with id.
func lockName(dir string, id, unique uint64) string {
	return filepath.Join(dir, strconv.FormatUint(id, 10)+"-"+strconv.FormatUint(unique, 10)+".lock")
}

// previous is the record of the release that detached the copy.
func (l *copyLock) previous() (Record, bool) {
	return decodeRecord(l.f)
}

// begin records, before the detach, which copy this process is releasing:
// a release that finds the copy gone meanwhile finds this record, waits
// for the lock and reads how it ended.
func (l *copyLock) begin(r Record) {
	r.PID, r.Released = os.Getpid(), time.Time{}
	l.write(r)
}

// done records that this process detached the copy.
func (l *copyLock) done() {
	if r, ok := decodeRecordAny(l.f); ok {
		r.Released = time.Now()
		l.write(r)
	}
}

// abort forgets the record of an act that did not detach the copy.
func (l *copyLock) abort() {
	_ = l.f.Truncate(0)
}

func (l *copyLock) write(r Record) {
	b, _ := json.Marshal(r)
	_ = l.f.Truncate(0)
	_, _ = l.f.WriteAt(append(b, '\n'), 0) // a note for a later actor: its loss only loses the note
}

func (l *copyLock) unlock() {
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
}

// decodeRecordAny is the record in f, finished or not.
func decodeRecordAny(f io.ReaderAt) (Record, bool) {
	b := make([]byte, 16<<10) // a mount point is at most 4096 bytes
	n, _ := f.ReadAt(b, 0)
	var r Record
	if n == 0 || n == len(b) || json.Unmarshal(b[:n], &r) != nil || r.Unique == 0 {
		return Record{}, false
	}
	return r, true
}

// decodeRecord is the record in f of a release that detached its copy.
func decodeRecord(f io.ReaderAt) (Record, bool) {
	r, ok := decodeRecordAny(f)
	return r, ok && !r.Released.IsZero()
}

// readRecord is the finished record in lock file name that match accepts.
// A record being written, or one whose release is still acting (not
// finished), is read again under a shared lock, which waits for that
// release to end.
func readRecord(name string, match func(Record) bool) (Record, bool) {
	f, err := os.OpenFile(name, os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return Record{}, false
	}
	defer f.Close()
	if r, ok := decodeRecordAny(f); ok && !match(r) {
		return Record{}, false
	} else if ok && !r.Released.IsZero() {
		return r, true
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_SH); err != nil {
		return Record{}, false
	}
	defer unix.Flock(int(f.Fd()), unix.LOCK_UN)
	r, ok := decodeRecord(f)
	return r, ok && match(r)
}

// released is the finished record of copy unique in the namespace born
// with id (a plan's refusal of a copy gone meanwhile names who took it).
func released(dir string, id, unique uint64) (Record, bool) {
	return readRecord(lockName(dir, id, unique), func(Record) bool { return true })
}

// ReleasedMount is the record of the latest release that detached mount
// id mountID (at where, unless "") of the namespace born with nsid: what
// a release that finds that mount gone says.
func ReleasedMount(dir string, nsid uint64, mountID int, where string) (Record, bool) {
	names, _ := filepath.Glob(filepath.Join(dir, strconv.FormatUint(nsid, 10)+"-*.lock"))
	rs := records(names, func(r Record) bool {
		return r.NSID == nsid && r.MountID == mountID && (where == "" || r.Where == where)
	})
	if len(rs) == 0 {
		return Record{}, false
	}
	return rs[len(rs)-1], true
}

// ReleasedDevice is every record of a release that detached a copy of
// device dev, oldest first: what a release of the device that finds
// nothing holding it says.
func ReleasedDevice(dir string, dev event.Dev) []Record {
	names, _ := filepath.Glob(filepath.Join(dir, "*.lock"))
	return records(names, func(r Record) bool { return r.Dev == dev })
}

// records reads the finished records of files that match accepts, in the
// order they were released.
func records(names []string, match func(Record) bool) []Record {
	var out []Record
	for _, name := range names {
		if r, ok := readRecord(name, match); ok {
			out = append(out, r)
		}
	}
	slices.SortFunc(out, func(a, b Record) int { return a.Released.Compare(b.Released) })
	return out
}
