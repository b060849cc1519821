package main

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestOneShotCollectsNearTheLimit: why and audit run with the collector
// off but near oneShotMemoryLimit; the daemon and the other commands keep
// the collector's default.
func TestOneShotCollectsNearTheLimit(t *testing.T) {
	for cmd, want := range map[string]bool{"why": true, "audit": true, "trace": false, "replay": false, "release": false, "version": false} {
		if isOneShot(cmd) != want {
			t.Errorf("isOneShot(%q) = %v, want %v", cmd, !want, want)
		}
	}
	oldPercent, oldLimit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	collectOnlyNearLimit()
	percent, limit := debug.SetGCPercent(oldPercent), debug.SetMemoryLimit(oldLimit)
	if percent != -1 || limit != oneShotMemoryLimit {
		t.Errorf("collectOnlyNearLimit: GC percent %d, memory limit %d; want -1 and %d", percent, limit, oneShotMemoryLimit)
	}
}
