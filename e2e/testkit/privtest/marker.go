package privtest

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Marker tells when the consumer of a tracer's events has caught up with
// the kernel. Under load it lags by seconds (another package's thousands
// of mounts, a loaded machine), and tracing stopped then drops what it had
// not read: a verdict checked after it would be on a stream with its end
// cut off. CaughtUp makes a call now (an unmount of a path that does not
// exist) and waits for the sink to report it (Saw): a sink hands events
// on one at a time, so every event made before it has been handled. The
// zero Marker is ready to use.
type Marker struct {
	mu   sync.Mutex
	path string        // the call waited for ("": none)
	seen chan struct{} // closed when it came
	// Lost, when set, counts the events the tracer reported lost so far: a
	// marker call lost with them (the ring buffer full under another
	// package's storm) is made again, and the test says so.
	Lost func() uint64
}

// CaughtUp returns once the sink has reported the marker call made now
// (at most d; past that the test fails). Where events were reported lost
// since the call (Lost), the call may be among them: it is made again.
func (m *Marker) CaughtUp(t testing.TB, d time.Duration) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		lost := m.lost()
		path, seen := m.call(t)
		for {
			wait := min(5*time.Second, time.Until(deadline))
			select {
			case <-seen:
				return
			case <-time.After(wait):
			}
			if time.Now().After(deadline) {
				t.Fatalf("the tracer did not deliver the marker call (umount %s) within %v", path, d)
			}
			if now := m.lost(); now > lost {
				t.Logf("%d events lost since the marker call (umount %s), which may be one of them: made again", now-lost, path)
				break
			}
		}
	}
}

// lost is Lost's count, 0 without it.
func (m *Marker) lost() uint64 {
	if m.Lost == nil {
		return 0
	}
	return m.Lost()
}

// call makes a marker call and returns its path and the channel closed
// when the sink reports it.
func (m *Marker) call(t testing.TB) (string, chan struct{}) {
	t.Helper()
	seen := make(chan struct{})
	m.mu.Lock()
	m.path, m.seen = "/mntleak-caught-up-"+strconv.FormatInt(time.Now().UnixNano(), 36), seen
	path := m.path
	m.mu.Unlock()
	if err := unix.Unmount(path, 0); err == nil {
		t.Fatalf("umount %s: it existed", path)
	}
	return path, seen
}

// Saw is told the target of each unmount the sink hands on: the marker
// call's ends CaughtUp's wait.
func (m *Marker) Saw(target string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.path != "" && target == m.path {
		close(m.seen)
		m.path = ""
	}
}
