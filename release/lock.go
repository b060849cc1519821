package release

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// LockDir holds one lock file per copy a release acts on.
const LockDir = "/run/mntleak/release"

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

// releasedBy is the note of the release that detached copy unique of the
// namespace born with id, read without the lock (a plan's refusal of a
// copy gone meanwhile names who took it), or "".
func releasedBy(dir string, id, unique uint64) string {
	b, err := os.ReadFile(lockName(dir, id, unique))
	if err != nil || len(b) > 512 {
		return ""
	}
	return string(bytes.TrimSpace(b))
}

// previous is what the release that detached the copy wrote, or "".
func (l *copyLock) previous() string {
	b := make([]byte, 512)
	n, _ := l.f.ReadAt(b, 0)
	return string(bytes.TrimSpace(b[:n]))
}

// done records that this process detached the copy.
func (l *copyLock) done() {
	line := "released by mntleak[" + strconv.Itoa(os.Getpid()) + "] at " + time.Now().UTC().Format(time.RFC3339Nano) + "\n"
	_ = l.f.Truncate(0)
	_, _ = l.f.WriteAt([]byte(line), 0) // a note for a later actor: its loss only loses the note
}

func (l *copyLock) unlock() {
	_ = unix.Flock(int(l.f.Fd()), unix.LOCK_UN)
	l.f.Close()
}
