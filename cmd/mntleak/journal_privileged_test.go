package main

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/journaldtest"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/sink/journald"
)

// busyUmount makes a failure for the daemon to explain: a tmpfs at mnt in
// the node namespace, a process whose cwd is in it, and an umount that
// fails with EBUSY. The process is killed (by pid) at cleanup.
func busyUmount(t *testing.T, node privtest.Node, mnt, source string) {
	t.Helper()
	node.Run(t, "mount", "-t", "tmpfs", source, mnt)
	holder := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "sh", "-c", "cd "+mnt+" && echo ready && exec sleep 600")
	out, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	buf := make([]byte, 6)
	if _, err := out.Read(buf); err != nil || string(buf) != "ready\n" {
		t.Fatalf("cwd holder: %q %v", buf, err)
	}
	if b, err := exec.Command("nsenter", "-t", strconv.Itoa(node.PID), "-m", "--", "umount", mnt).CombinedOutput(); err == nil {
		t.Fatalf("umount of a busy mount succeeded: %s", b)
	}
}

// waitFinding waits for the daemon's failure finding on path in its logs.
func waitFinding(t *testing.T, d *privtest.Daemon, path string) {
	t.Helper()
	d.Logs.Wait(t, "finding on "+path, func(s string) bool {
		return strings.Contains(s, `"finding":"failure"`) && strings.Contains(s, `"path":"`+path+`"`)
	})
}

// TestJournalStalled: the journald is SIGSTOPped while raw events go to it
// (--journald-events) during a storm. The daemon keeps reading, the
// journal's drops are counted and warned about; after SIGCONT new entries
// reach the journal. Without correlation: what is measured is the reader
// against its outputs, not the correlator against other tests' load.
func TestJournalStalled(t *testing.T) {
	privtest.Require(t)
	j := journaldtest.Start(t)
	dir := t.TempDir()
	d := privtest.StartDaemon(t, nil, "--journald", "on", "--journald-socket", j.Socket, "--journald-events", "--correlate=false",
		"--metrics-addr", "127.0.0.1:0", "--state-dir", filepath.Join(dir, "state"))
	addr := metricsAddr(t, d)
	if len(j.Entries(t, 15*time.Second, "MESSAGE=tracing")) == 0 {
		t.Fatal("no tracing line in the journal")
	}
	before := scrape(t, addr, "mntleak_events_total", "")

	j.Pause(t)
	storm := startStorm(t, stormRate, 3*time.Second)
	d.Logs.Wait(t, "journal overload warning", func(s string) bool {
		return strings.Contains(s, `"msg":"output overloaded`) && strings.Contains(s, `"sink":"journal"`)
	})
	if err := storm.Wait(); err != nil {
		t.Fatal(err)
	}
	read := scrape(t, addr, "mntleak_events_total", "") - before
	dropped := scrape(t, addr, "mntleak_sink_dropped_total", `sink="journal"`)
	lost := scrape(t, addr, "mntleak_events_lost_total", "")
	t.Logf("journald stopped: %.0f events read, %.0f journal entries dropped, %.0f lost in the kernel", read, dropped, lost)
	// A blocking send would have stopped the reader after the journal's
	// queues (2048 entries) and socket backlog; kernel losses are only
	// logged: other tests' storms share these 2 CPUs.
	if dropped == 0 || read < 2*journald.OtherQueue {
		t.Errorf("read %.0f, journal dropped %.0f, kernel lost %.0f: want the reader to go on", read, dropped, lost)
	}

	j.Resume(t)
	// A mount by a command of a name of its own: its raw event is the one
	// entry of that command in the journal.
	node := privtest.StartNode(t)
	mnt := privtest.Mkdir(t, filepath.Join(dir, "after"))
	prog := privtest.CopyBinary(t, "mount", filepath.Join(dir, "mntleak-sigcont"))
	droppedBefore := scrape(t, addr, "mntleak_sink_dropped_total", `sink="journal"`)
	node.Run(t, prog, "-t", "tmpfs", "mntleak-after-sigcont", mnt)
	node.Run(t, "umount", mnt)
	found := false
	for deadline := time.Now().Add(15 * time.Second); !found && time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		for _, e := range j.Entries(t, 0, "MNTLEAK_KIND=mount") {
			if msg, _ := e["MESSAGE"].(string); strings.Contains(msg, "mntleak-sigcont[") {
				found = true
			}
		}
	}
	if !found {
		// Whether the daemon dropped entries meanwhile (its queue still
		// full of the stall's) or journald did not take them, for the
		// one who reads the failure.
		t.Errorf("the mount made after SIGCONT is not in the journal (the daemon dropped %.0f journal entries from the mount on)",
			scrape(t, addr, "mntleak_sink_dropped_total", `sink="journal"`)-droppedBefore)
	}
	if _, code := d.Signal(t, syscall.SIGTERM, privtest.ExitLimit()); code != 0 {
		t.Errorf("exit %d", code)
	}
}

// TestJournalGoneAndBack: the journald goes away, its socket removed.
// Findings still reach stderr and the outage is warned about once; a
// journald started again at the same socket gets the next finding and the
// lifecycle lines.
func TestJournalGoneAndBack(t *testing.T) {
	privtest.Require(t)
	j := journaldtest.Start(t)
	dir := t.TempDir()
	d := privtest.StartDaemon(t, nil, "--journald", "on", "--journald-socket", j.Socket, "--state-dir", filepath.Join(dir, "state"))
	if len(j.Entries(t, 15*time.Second, "MESSAGE=tracing")) == 0 {
		t.Fatal("no tracing line in the journal")
	}
	node := privtest.StartNode(t)

	j.Stop(t)
	gone := []string{privtest.Mkdir(t, filepath.Join(dir, "gone1")), privtest.Mkdir(t, filepath.Join(dir, "gone2"))}
	for i, mnt := range gone {
		busyUmount(t, node, mnt, "mntleak-journal-gone-"+strconv.Itoa(i))
		waitFinding(t, d, mnt) // on stderr
	}
	d.Logs.Wait(t, "outage warning", func(s string) bool { return strings.Contains(s, "journal unavailable") })

	j.Restart(t)
	back := privtest.Mkdir(t, filepath.Join(dir, "back"))
	busyUmount(t, node, back, "mntleak-journal-back")
	waitFinding(t, d, back)
	if got := j.Entries(t, 15*time.Second, "MNTLEAK_FINDING=failure", "MNTLEAK_PATH="+back); len(got) == 0 {
		t.Error("the finding made after the restart is not in the journal")
	}
	d.Logs.Wait(t, "recovery line", func(s string) bool { return strings.Contains(s, `"msg":"journal available again"`) })
	if _, code := d.Signal(t, syscall.SIGTERM, privtest.ExitLimit()); code != 0 {
		t.Errorf("exit %d", code)
	}
	if got := j.Entries(t, 15*time.Second, "MESSAGE=stopped"); len(got) == 0 {
		t.Error("the stopped line is not in the restarted journal")
	}
	if n := strings.Count(strings.Join(d.Logs.All(), "\n"), "journal unavailable"); n != 1 {
		t.Errorf("outage warned %d times, want once", n)
	}
	for _, mnt := range gone {
		if got := j.Entries(t, 0, "MNTLEAK_PATH="+mnt); len(got) != 0 {
			t.Errorf("a finding made while the journal was gone is in it: %v", got)
		}
	}
}
