package procfs

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/oracle"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
)

// TestSetnsThreadPins: a holder namespace's single-threaded member (sleep)
// holds its tmpfs copy by its cwd and an open file; a thread of this
// process (not its main one, which stays in its own namespace) joins that
// namespace (setns), goes into the copy (chdir) and opens a file there.
// Pins, and PinsIn scoped to the holder namespace (every process, and the
// candidates a caller lists: the namespace's members, this process among
// them by its thread), list exactly what the kernel says holds the tmpfs
// (the oracle, which shares no code with procfs): the holder's cwd and fd,
// this process's thread's cwd (with its tid) and its fd. A pin search that
// skipped a process's threads, or a process whose main thread is
// elsewhere, misses the last two.
func TestSetnsThreadPins(t *testing.T) {
	privtest.Require(t)
	vol := privtest.Mkdir(t, filepath.Join(t.TempDir(), "vol"))
	h := privtest.StartHolder(t, "private", "mount -t tmpfs -o size=1m mntleak-setns-pin "+vol+" && cd "+vol+" && : >f && exec 3<f")
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(h.PID)+"/cwd", &st); err != nil {
		t.Fatal(err)
	}
	dev := event.MakeDev(unix.Major(st.Dev), unix.Minor(st.Dev))
	tid := privtest.JoinAndHold(t, h.PID, vol, "f")

	want := oracleWants(t, dev)
	if !slices.Contains(want, fmt.Sprintf("%d/%d cwd", os.Getpid(), tid)) || !slices.Contains(want, fmt.Sprintf("%d/0 fd 3", h.PID)) {
		t.Fatalf("the oracle finds %v on %s: want the holder %d's pins and this process's thread %d's cwd", want, dev, h.PID, tid)
	}
	host := Host{}
	all, err := host.Pins([]event.Dev{dev})
	if partial(err) != nil {
		t.Fatal(err)
	}
	scoped, err := host.PinsIn([]event.Dev{dev}, []uint32{h.MntNS}, nil)
	if partial(err) != nil {
		t.Fatal(err)
	}
	listed, err := host.PinsIn([]event.Dev{dev}, []uint32{h.MntNS}, []int{h.PID, os.Getpid()})
	if partial(err) != nil {
		t.Fatal(err)
	}
	for name, pins := range map[string][]Pin{"Pins": all, "PinsIn": scoped, "PinsIn with candidates": listed} {
		if got := pinKeys(pins); !slices.Equal(got, want) {
			t.Errorf("%s on %s: %v, the kernel's (the oracle's) %v", name, dev, got, want)
		}
	}
}

// oracleWants is what the kernel says pins dev, as pinKeys prints it (the
// oracle's "fd N" is the descriptor and its number).
func oracleWants(t *testing.T, dev event.Dev) []string {
	t.Helper()
	a, err := oracle.Holders(oracle.Target{Major: dev.Major(), Minor: dev.Minor()})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range a.Pins {
		out = append(out, fmt.Sprintf("%d/%d %s", p.PID, p.TID, p.How))
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// pinKeys prints pins as "PID/TID kind" ("fd N" for a descriptor),
// sorted, one per kind and thread.
func pinKeys(pins []Pin) []string {
	var out []string
	for _, p := range pins {
		kind := string(p.Kind)
		if p.FD != nil {
			kind += " " + strconv.Itoa(*p.FD)
		}
		out = append(out, fmt.Sprintf("%d/%d %s", p.PID, p.TID, kind))
	}
	slices.Sort(out)
	return slices.Compact(out)
}
