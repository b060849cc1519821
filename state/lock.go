package state

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// LockName is the file in the state dir that one daemon holds locked.
const LockName = "lock"

// HeldError says another process holds the state dir.
type HeldError struct {
	Dir string
	PID int // 0 when the holder's pid could not be read
}

func (e *HeldError) Error() string {
	who := "another mntleak"
	if e.PID != 0 {
		who += " (pid " + strconv.Itoa(e.PID) + ")"
	}
	return "state dir " + e.Dir + " is in use by " + who + ": one daemon per state dir (stop it, or give this one another --state-dir)"
}

// DirLock is the exclusive lock one daemon holds on its state dir for its
// whole life: two daemons on one node would trace twice, report every
// finding twice and interleave their segments.
type DirLock struct {
	f *os.File
}

// Lock takes the state dir's lock (flock, released by the kernel when the
// process exits, however it exits) and writes this process's pid into it.
// A dir another process holds is a *HeldError naming that process.
func Lock(dir string) (*DirLock, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("state dir %s: %w", dir, err)
	}
	path := filepath.Join(dir, LockName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state dir lock %s: %w", path, err)
	}
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB); err != nil {
		defer f.Close()
		if errors.Is(err, unix.EWOULDBLOCK) {
			b := make([]byte, 32)
			n, _ := f.ReadAt(b, 0)
			pid, _ := strconv.Atoi(strings.TrimSpace(string(b[:n])))
			return nil, &HeldError{Dir: dir, PID: pid}
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err != nil {
		f.Close()
		return nil, fmt.Errorf("state dir lock %s: %w", path, err)
	}
	if _, err := f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0); err != nil {
		f.Close()
		return nil, fmt.Errorf("state dir lock %s: %w", path, err)
	}
	return &DirLock{f: f}, nil
}

// Unlock releases the lock. It is nil-safe.
func (l *DirLock) Unlock() error {
	if l == nil {
		return nil
	}
	return l.f.Close()
}
