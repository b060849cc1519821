package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/daemon"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/event"
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
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// Without correlation: what is measured is the reader against its
	// outputs, not the correlator against other tests' load.
	d := privtest.StartDaemon(t, w, "--journald", "off", "--correlate=false", "--metrics-addr", "127.0.0.1:0", "--state-dir", filepath.Join(t.TempDir(), "state"))
	w.Close() // the daemon has it
	addr := metricsAddr(t, d)
	before := scrape(t, addr, "mntleak_events_total", "")
	rss0 := rssBytes(t, d.Cmd.Process.Pid)

	storm := startStorm(t, stormRate, 8*time.Second)
	d.Logs.Wait(t, "overload warning", func(s string) bool {
		return strings.Contains(s, `"msg":"output overloaded`) && strings.Contains(s, `"sink":"stdout"`)
	})
	during := scrape(t, addr, "mntleak_events_total", "")
	dropped := scrape(t, addr, "mntleak_sink_dropped_total", `sink="stdout"`)
	lost := scrape(t, addr, "mntleak_events_lost_total", "")
	rss := rssBytes(t, d.Cmd.Process.Pid)
	t.Logf("stdout blocked: %.0f events read, %.0f lines dropped, %.0f lost in the kernel, RSS %d MiB (%d MiB before the storm)", during-before, dropped, lost, rss>>20, rss0>>20)
	// The reader went on long past the point where a blocking write would
	// have stopped it (a 64 KiB pipe, a 4 MiB queue). Kernel losses are
	// only logged: other tests' storms share these 2 CPUs.
	if dropped == 0 || during-before <= dropped {
		t.Errorf("events read %.0f, dropped %.0f: want the reader to go on past the drops", during-before, dropped)
	}
	// The queue (4 MiB) and a batch being written: far below this (the
	// race detector's shadow memory included); what the daemon had before
	// the storm (its code, client-go's API types) is not the queue's.
	if rss-rss0 > 80<<20 {
		t.Errorf("RSS grew by %d MiB (%d MiB to %d MiB) while stdout is blocked", (rss-rss0)>>20, rss0>>20, rss>>20)
	}
	if err := storm.Wait(); err != nil {
		t.Fatalf("storm: %v", err)
	}
	// Warnings are rate-limited: at most one per interval and sink.
	warnings := 0
	for _, s := range d.Logs.All() {
		if strings.Contains(s, `"msg":"output overloaded`) && strings.Contains(s, `"sink":"stdout"`) {
			warnings++
		}
	}
	if max := int(10*time.Second/daemon.DropWarnInterval) + 1; warnings > max {
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
	if _, code := d.Signal(t, syscall.SIGTERM, privtest.ExitLimit()); code != 0 {
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

// TestStderrNobodyReads: stderr (under systemd, a stream to journald)
// stops being read, then a burst of failures is explained. The findings
// are logged without the reader waiting: the findings counter grows far
// past what the pipe holds, and once stderr is read again every finding is
// there, each a whole line.
func TestStderrNobodyReads(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "bash", "nsenter")
	bin := privtest.Binary(t)
	dir := t.TempDir()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := exec.Command(bin, "trace", "--format", "json", "--log-format", "json", "--journald", "off",
		"--metrics-addr", "127.0.0.1:0", "--state-dir", filepath.Join(dir, "state"))
	cmd.Stderr = w
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	w.Close()
	done := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(done) }()
	t.Cleanup(func() {
		select {
		case <-done:
		default:
			_ = cmd.Process.Kill()
			<-done
		}
	})
	// Read up to the tracing line, then stop reading.
	br := bufio.NewReaderSize(r, 1<<20)
	var addr string
	readLine := make(chan string)
	go func() {
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				close(readLine)
				return
			}
			readLine <- line
			if strings.Contains(line, `"msg":"tracing"`) {
				close(readLine)
				return
			}
		}
	}()
	for line := range readLine {
		if i := strings.Index(line, `"addr":"`); i >= 0 && strings.Contains(line, `"msg":"serving metrics"`) {
			addr = line[i+len(`"addr":"`):]
			addr = addr[:strings.IndexByte(addr, '"')]
		}
	}
	if addr == "" {
		t.Fatal("no metrics address before tracing")
	}

	// Distinct failures (repeats of one are folded into one finding): as
	// many tmpfs mounts, each kept busy by a descriptor of one holder, and
	// an umount of each.
	const failures = 100
	node := privtest.StartNode(t)
	mnt := privtest.Mkdir(t, filepath.Join(dir, "busy"))
	node.Run(t, "bash", "-c", fmt.Sprintf(`for i in $(seq %d); do mkdir -p %s/$i && mount -t tmpfs mntleak-stderr-$i %s/$i && touch %s/$i/f || exit 1; done`, failures, mnt, mnt, mnt))
	holder := exec.Command("nsenter", "-t", fmt.Sprint(node.PID), "-m", "--", "bash", "-c",
		fmt.Sprintf(`for i in $(seq %d); do exec {fd}<%s/$i/f || exit 1; done; echo ready; exec sleep 600`, failures, mnt))
	holderOut, err := holder.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := holder.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	if line, err := bufio.NewReader(holderOut).ReadString('\n'); err != nil || line != "ready\n" {
		t.Fatalf("holder: %q %v", line, err)
	}
	node.Run(t, "bash", "-c", fmt.Sprintf(`for i in $(seq %d); do umount %s/$i 2>/dev/null; done; true`, failures, mnt))
	// A finding line is some 3 KiB: a reader waiting on a 64 KiB pipe
	// would stop after a score of them.
	const want = 70
	deadline := time.Now().Add(60 * time.Second)
	var findings float64
	for time.Now().Before(deadline) {
		if findings = scrape(t, addr, "mntleak_findings_total", ""); findings >= want {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("%.0f findings with stderr unread", findings)
	if findings < want {
		t.Fatalf("%.0f findings, want at least %d: the reader waited for stderr", findings, want)
	}
	if dropped := scrape(t, addr, "mntleak_sink_dropped_total", `sink="stderr"`); dropped != 0 {
		t.Errorf("%.0f stderr lines dropped: findings must be kept", dropped)
	}

	// Read again: every finding is there, whole.
	var mu sync.Mutex
	var logged []string
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		for {
			line, err := br.ReadString('\n')
			if err != nil {
				return
			}
			mu.Lock()
			logged = append(logged, line)
			mu.Unlock()
		}
	}()
	time.Sleep(time.Second)
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
		if waitErr != nil {
			t.Errorf("exit: %v", waitErr)
		}
	case <-time.After(privtest.ExitLimit()):
		t.Fatalf("still running %v after SIGTERM", privtest.ExitLimit())
	}
	select {
	case <-eof: // all the daemon wrote is read
	case <-time.After(5 * time.Second):
		t.Fatal("stderr not closed after the exit")
	}
	mu.Lock()
	defer mu.Unlock()
	n, all, size := 0, 0, 0
	for _, l := range logged {
		if !json.Valid([]byte(l)) {
			t.Fatalf("stderr line is not whole JSON: %q", l)
		}
		if strings.Contains(l, `"finding":"`) {
			all++ // the daemon traces the whole machine: other tests' findings count too
		}
		if strings.Contains(l, `"finding":"failure"`) && strings.Contains(l, `"path":"`+mnt+`/`) {
			n++
			size += len(l)
		}
	}
	if float64(all) < findings || n < want {
		t.Errorf("%d findings on stderr (%d of this test's, want at least %d), %.0f counted", all, n, want, findings)
	}
	// The test means something only if what was logged unread is more than
	// a pipe holds (64 KiB).
	if n > 0 && findings*float64(size/n) < 2*64<<10 {
		t.Errorf("%.0f findings of %d bytes: not more than twice a pipe's capacity", findings, size/n)
	}
}
