package daemon

import (
	"bufio"
	"io"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/procfs"
)

// TestMountNotesDropAnUnheldLeakEarly: a node (a private namespace standing
// for the host) unmounts its tmpfs while a holder's namespace has a private
// copy: a leak, pending until the teardown settles (2 s). Then the node
// removes the directory, which detaches the copy; the kernel's note says
// so. With nothing pinning the copy (control), the next event drops the
// pending leak at once, and no finding comes then nor once the settle
// window has passed (and the correlator is flushed). With the holder's
// cwd in the copy (pinned), the leak stays pending and is reported at the
// settle: the detached copy, pinned by the holder's cwd.
func TestMountNotesDropAnUnheldLeakEarly(t *testing.T) {
	for _, c := range []struct{ name, holder string }{
		{"control", "echo $$ && exec sleep 600"}, // its pid once it is in place
		{"pinned_by_cwd", "cd VOL && echo $$ && exec sleep 600"},
	} {
		t.Run(c.name, func(t *testing.T) { dropUnheld(t, c.holder, c.name != "control") })
	}
}

func dropUnheld(t *testing.T, holderScript string, pinned bool) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "sh", "sleep", "mount", "umount")
	vol := filepath.Join(t.TempDir(), "vol")
	holderScript = strings.ReplaceAll(holderScript, "VOL", vol)
	node := exec.Command("unshare", "-m", "--propagation", "private", "sh", "-c",
		"mkdir "+vol+" && mount -t tmpfs mndrop "+vol+" && { unshare -m --propagation private sh -c '"+holderScript+"' & } && "+
			"read a && umount "+vol+" && echo u && read b && rmdir "+vol+" && echo r && read end")
	stdin, err := node.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := node.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := node.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewReader(stdout)
	line, _ := lines.ReadString('\n')
	holder, herr := strconv.Atoi(strings.TrimSpace(line))
	t.Cleanup(func() {
		if herr == nil {
			_ = unix.Kill(holder, unix.SIGKILL)
		}
		stdin.Close()
		_ = node.Process.Kill()
		_ = node.Wait()
	})
	if herr != nil {
		t.Fatalf("holder's pid: %q", line)
	}
	next := func(want string) {
		t.Helper()
		if _, err := io.WriteString(stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
		if got, _ := lines.ReadString('\n'); strings.TrimSpace(got) != want {
			t.Fatalf("node: %q, want %q", got, want)
		}
	}
	hns, nns := privtest.MountNS(t, strconv.Itoa(holder)), privtest.MountNS(t, strconv.Itoa(node.Process.Pid))

	var found []*finding.Finding
	corr := correlate.New(procfs.Host{}, correlate.Options{}, func(f *finding.Finding) { found = append(found, f) })
	if err := corr.Start(); err != nil {
		t.Fatal(err)
	}
	mw := watchOnly(t, corr, hns)
	apply := func() {
		t.Helper()
		notes, err := mw.drain(time.Now)
		if err != nil {
			t.Fatal(err)
		}
		for _, n := range notes {
			corr.Note(n)
		}
	}
	apply()
	if _, err := corr.TableOf(hns); err != nil {
		t.Fatal(err)
	}
	at := time.Now()
	next("u")
	corr.Handle(&event.Event{Time: at, Kind: event.KindUmount, PID: uint32(node.Process.Pid), Comm: "umount", MntNS: nns, Target: vol})
	if n := corr.PendingLeaks(); n != 1 {
		t.Fatalf("after the unmount: %d leaks pending, want the holder's copy's", n)
	}
	next("r")
	apply()
	other := func(d time.Duration) *event.Event { // an event of no concern: a process of the node's exits
		return &event.Event{Time: at.Add(d), Kind: event.KindExit, PID: 1 << 30, Comm: "true", MntNS: nns, SyscallNr: -1}
	}
	corr.Handle(other(10 * time.Millisecond))
	want := 0
	if pinned {
		want = 1
	}
	if n := corr.PendingLeaks(); n != want || len(found) != 0 {
		t.Fatalf("at the event after the note of the detach: %d leaks pending, %d findings; want %d, 0", n, len(found), want)
	}
	corr.Handle(other(3 * time.Second)) // past the 2 s settle
	corr.Flush()
	if !pinned {
		if len(found) != 0 {
			t.Fatalf("control: %d findings after the settle, want none: %+v", len(found), found[0])
		}
		return
	}
	if len(found) != 1 || found[0].Kind != finding.KindLeak || len(found[0].Holders) != 1 {
		t.Fatalf("pinned: %d findings, want one leak with one holder: %+v", len(found), found)
	}
	h := found[0].Holders[0]
	if h.MntNS != hns || len(h.Pins) != 1 || h.Pins[0].Pin != string(procfs.PinCwd) || h.Pins[0].PID != holder {
		t.Errorf("pinned: holder %+v, want mnt:[%d] pinned by the cwd of pid %d", h, hns, holder)
	}
}
