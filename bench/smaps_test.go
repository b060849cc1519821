package bench

import (
	"os"
	"testing"
)

// The parts of this process's resident set add up to its VmRSS (read just
// after; the test's own allocations move it a little), and the binary's
// and the anonymous pages are among them.
func TestMemoryPartsAddUp(t *testing.T) {
	parts, err := memoryPartsOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	mem, err := memoryOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	sum := parts.Binary + parts.BPFMaps + parts.Anon + parts.Other
	if parts.Binary == 0 || parts.Anon == 0 {
		t.Errorf("parts %s: no binary or no anonymous pages", parts)
	}
	if diff := sum - mem.RSS; diff > mem.RSS/10 || -diff > mem.RSS/10 {
		t.Errorf("parts %s add up to %d bytes, VmRSS %d", parts, sum, mem.RSS)
	}
}
