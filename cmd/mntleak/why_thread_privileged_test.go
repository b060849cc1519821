package main

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
	"github.com/mntleak/mntleak/finding"
)

// TestWhyNamesAJoinedThread: the pins were all made before `mntleak why`
// ran (a one-shot command sees no event): a holder namespace's
// single-threaded member holds its tmpfs copy by its cwd and an open
// file, and a thread of the test process (its main thread in the host's
// namespace) joined that namespace (setns), went into the copy and opened
// a file there. why on the directory (a mount point in the holder's
// namespace only) names exactly the pins the kernel shows (the oracle:
// the holder's cwd and fd, the thread's cwd with its tid, and the test
// process's fd the thread opened through the copy, which was left out
// before pin_threads.go: it was looked for in the main thread's namespace).
func TestWhyNamesAJoinedThread(t *testing.T) {
	privtest.Require(t)
	bin := privtest.Binary(t)
	vol := privtest.Mkdir(t, filepath.Join(t.TempDir(), "vol"))
	h := privtest.StartHolder(t, "private", "mount -t tmpfs -o size=1m mntleak-why-joined "+vol+" && cd "+vol+" && : >f && exec 3<f")
	var st unix.Stat_t
	if err := unix.Stat("/proc/"+strconv.Itoa(h.PID)+"/cwd", &st); err != nil {
		t.Fatal(err)
	}
	tid := privtest.JoinAndHold(t, h.PID, vol, "f")
	code, f := whyOf(t, bin, vol)
	if code != exitError || f == nil {
		t.Fatalf("why %s: exit %d, %+v: want the holder's copy and its pins", vol, code, f)
	}
	got, want := pinsBeside(t, st.Dev, f)
	if self := fmt.Sprintf("%d/%d cwd", os.Getpid(), tid); !slices.Contains(want, self) {
		t.Fatalf("the oracle finds %v: want the thread's cwd %s among them", want, self)
	}
	if !slices.Equal(slices.Compact(got), slices.Compact(want)) {
		t.Errorf("why %s names the pins %v, the kernel's (the oracle's) are %v\n%s", vol, got, want, f.Report())
	}
}

// pinsBeside returns the pins finding f names and those the oracle finds
// on device dev now, each sorted, as pinKey prints them.
func pinsBeside(t *testing.T, dev uint64, f *finding.Finding) (got, want []string) {
	t.Helper()
	a, err := oracle.Holders(oracle.Target{Major: unix.Major(dev), Minor: unix.Minor(dev)})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range a.Pins {
		want = append(want, fmt.Sprintf("%d/%d %s", p.PID, p.TID, p.How))
	}
	for _, hd := range f.Holders {
		for _, p := range hd.Pins {
			got = append(got, pinKey(p))
		}
	}
	slices.Sort(want)
	slices.Sort(got)
	return got, want
}

// pinKey prints a finding's pin as the oracle's pin test prints its own:
// "PID/TID cwd", "PID/TID fd N".
func pinKey(p finding.PinRef) string {
	how := p.Pin
	if p.FD != nil {
		how += " " + strconv.Itoa(*p.FD)
	}
	return fmt.Sprintf("%d/%d %s", p.PID, p.TID, how)
}
