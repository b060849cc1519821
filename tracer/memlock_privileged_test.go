package tracer_test

import (
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/tracer"
)

// TestRemoveMemlock: on a kernel that charges BPF memory to the memory
// cgroup (this one, 6.x) RemoveMemlock leaves RLIMIT_MEMLOCK as it was and
// says so; the tracer then loads under a limit far below its ring buffer.
func TestRemoveMemlock(t *testing.T) {
	privtest.Require(t)
	var before unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &before); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Setrlimit(unix.RLIMIT_MEMLOCK, &before) })
	// 64 KiB, as many distributions set it: lowering needs no privilege.
	small := unix.Rlimit{Cur: 64 << 10, Max: before.Max}
	if err := unix.Setrlimit(unix.RLIMIT_MEMLOCK, &small); err != nil {
		t.Fatal(err)
	}
	got, err := tracer.RemoveMemlock()
	if err != nil {
		t.Fatal(err)
	}
	if got != tracer.MemlockCgroup {
		t.Errorf("RemoveMemlock() = %q on a 6.x kernel, want %q", got, tracer.MemlockCgroup)
	}
	var after unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_MEMLOCK, &after); err != nil {
		t.Fatal(err)
	}
	if after != small {
		t.Errorf("RLIMIT_MEMLOCK %+v after RemoveMemlock, want it untouched (%+v)", after, small)
	}
	startTracer(t) // fails the test if the programs and the default ring buffer do not load
}
