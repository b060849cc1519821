package main

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/internal/privtest"
)

// stormRate (bind/umount pairs a second, some 4 events each) outruns a
// stdout nobody reads within a second or two of queue.
const stormRate = 3000

// TestStdoutNobodyReads: the event stream goes to a pipe nobody reads
// during a mount storm. The daemon keeps reading the ring buffer (its
// event counter grows, the kernel loses nothing), its memory stays
// bounded, the drops are counted in mntleak_sink_dropped_total{sink="stdout"}
// and warned about, rate-limited; once the pipe is read again, the stream
// resumes with a lost line marking the gap, and every line is whole.
func TestStdoutNobodyReads(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare")
	bin := buildBinary(t)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Without correlation: what is measured is the reader against its
	// outputs, not the correlator against other tests' load.
	d := startTrace(t, bin, w, "--journald", "off", "--correlate=false", "--metrics-addr", "127.0.0.1:0", "--state-dir", filepath.Join(t.TempDir(), "state"))
	w.Close() // the daemon has it
	addr := d.metricsAddr(t)
	before := scrape(t, addr, "mntleak_events_total", "")

	storm := startStorm(t, stormRate, 8*time.Second)
	d.logs.wait(t, "overload warning", func(s string) bool {
		return strings.Contains(s, `"msg":"output overloaded`) && strings.Contains(s, `"sink":"stdout"`)
	})
	during := scrape(t, addr, "mntleak_events_total", "")
	dropped := scrape(t, addr, "mntleak_sink_dropped_total", `sink="stdout"`)
	lost := scrape(t, addr, "mntleak_events_lost_total", "")
	rss := rssBytes(t, d.cmd.Process.Pid)
	t.Logf("stdout blocked: %.0f events read, %.0f lines dropped, %.0f lost in the kernel, RSS %d MiB", during-before, dropped, lost, rss>>20)
	// The reader went on long past the point where a blocking write would
	// have stopped it (a 64 KiB pipe, a 4 MiB queue). Kernel losses are
	// only logged: other tests' storms share these 2 CPUs.
	if dropped == 0 || during-before <= dropped {
		t.Errorf("events read %.0f, dropped %.0f: want the reader to go on past the drops", during-before, dropped)
	}
	// The queue (4 MiB) and a batch being written: far below this.
	if rss > 150<<20 {
		t.Errorf("RSS %d MiB while stdout is blocked", rss>>20)
	}
	if err := storm.Wait(); err != nil {
		t.Fatalf("storm: %v", err)
	}
	// Warnings are rate-limited: at most one per interval and sink.
	warnings := 0
	for _, s := range d.logs.all() {
		if strings.Contains(s, `"msg":"output overloaded`) && strings.Contains(s, `"sink":"stdout"`) {
			warnings++
		}
	}
	if max := int(10*time.Second/dropWarnInterval) + 1; warnings > max {
		t.Errorf("%d overload warnings, want at most %d", warnings, max)
	}

	// Read again: the queued lines, the lost marker, then new events.
	var mu sync.Mutex
	var got []string
	go func() {
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			mu.Lock()
			got = append(got, sc.Text())
			mu.Unlock()
		}
	}()
	mnt := privtest.Mkdir(t, filepath.Join(t.TempDir(), "after"))
	time.Sleep(500 * time.Millisecond)
	node := privtest.StartNode(t)
	node.Run(t, "mount", "-t", "tmpfs", "mntleak-resumed", mnt)
	node.Run(t, "umount", mnt)
	deadline := time.Now().Add(10 * time.Second)
	resumed := false
	for !resumed && time.Now().Before(deadline) {
		time.Sleep(100 * time.Millisecond)
		mu.Lock()
		for _, s := range got {
			resumed = resumed || strings.Contains(s, `"source":"mntleak-resumed"`)
		}
		mu.Unlock()
	}
	if !resumed {
		t.Fatal("the stream did not resume once stdout was read")
	}
	if _, code := d.signalAndWait(t, syscall.SIGTERM, 2*time.Second); code != 0 {
		t.Errorf("exit %d after SIGTERM", code)
	}
	mu.Lock()
	defer mu.Unlock()
	markers := 0
	for _, s := range got {
		var ev event.Event
		if err := json.Unmarshal([]byte(s), &ev); err != nil {
			t.Fatalf("stdout line %q: %v", s, err)
		}
		if ev.Kind == event.KindLost && ev.Comm == "mntleak" {
			markers++
		}
	}
	if markers == 0 {
		t.Error("no lost line marks the gap in the stream")
	}
}
