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
}

// CaughtUp returns once the sink has reported the marker call made now
// (at most d; past that the test fails).
func (m *Marker) CaughtUp(t testing.TB, d time.Duration) {
	t.Helper()
	seen := make(chan struct{})
	m.mu.Lock()
	m.path, m.seen = "/mntleak-caught-up-"+strconv.FormatInt(time.Now().UnixNano(), 36), seen
	path := m.path
	m.mu.Unlock()
	if err := unix.Unmount(path, 0); err == nil {
		t.Fatalf("umount %s: it existed", path)
	}
	select {
	case <-seen:
	case <-time.After(d):
		t.Fatalf("the tracer did not deliver the marker call (umount %s) within %v", path, d)
	}
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
