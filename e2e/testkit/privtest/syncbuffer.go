package privtest

import (
	"bytes"
	"sync"
)

// SyncBuffer collects a stream written by another goroutine (a daemon's
// stderr, a sender's outage reports) and reads it safely meanwhile.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
