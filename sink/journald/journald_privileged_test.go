package journald_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mntleak/mntleak/e2e/testkit/journaldtest"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/sink/journald"
)

func newTee(t *testing.T, j *journaldtest.Journal) (*zap.Logger, *journald.Core, *privtest.SyncBuffer) {
	t.Helper()
	stderr := &privtest.SyncBuffer{}
	base := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(stderr), zap.InfoLevel))
	sock := journald.NewSocket(j.Socket, 0)
	log, core := journald.Tee(base, zap.InfoLevel, sock.Send)
	t.Cleanup(func() { core.Close(time.Second); sock.Close() })
	return log, core, stderr
}

func TestFindingsReachTheJournal(t *testing.T) {
	j := journaldtest.Start(t)
	log, core, stderr := newTee(t, j)
	path := fmt.Sprintf("/var/lib/mntleak-journald-test/%d", time.Now().UnixNano())

	log.Named("correlate").Error("EBUSY openat /dev/loop3 by mkfs.ext4[4121]: still mounted in mnt:[4026532290]",
		zap.String("finding", "failure"), zap.String("cause", "private-tmp"), zap.String("syscall", "openat"),
		zap.String("errno", "EBUSY"), zap.String("path", path), zap.Int("holder_pid", 3990),
		zap.Uint32("holder_mntns", 4026532290), zap.String("leak_event", "unshare(CLONE_NEWNS) by ntpd[3990]"),
		zap.String("unit", "ntpd.service"), zap.Any("detail", map[string]any{"cause": "private-tmp"}))
	log.Named("correlate").Warn("LEAK "+path, zap.String("cause", "rprivate-bind"), zap.String("path", path+"-leak"))
	// Over the datagram limit: sent as a sealed memfd.
	log.Info("big", zap.String("path", path+"-big"), zap.String("detail", strings.Repeat("x", 300<<10)))

	got := j.Entries(t, 15*time.Second, "MNTLEAK_PATH="+path)
	if len(got) != 1 {
		t.Fatalf("%d journal entries for %s, want 1", len(got), path)
	}
	e := got[0]
	for k, want := range map[string]string{
		"MESSAGE":  "EBUSY openat /dev/loop3 by mkfs.ext4[4121]: still mounted in mnt:[4026532290]",
		"PRIORITY": "3", "MNTLEAK_CAUSE": "private-tmp", "MNTLEAK_SYSCALL": "openat", "MNTLEAK_ERRNO": "EBUSY",
		"MNTLEAK_HOLDER_PID": "3990", "MNTLEAK_HOLDER_MNTNS": "4026532290", "MNTLEAK_UNIT": "ntpd.service",
		"MNTLEAK_LEAK_EVENT": "unshare(CLONE_NEWNS) by ntpd[3990]", "MNTLEAK_LOGGER": "correlate",
		"SYSLOG_IDENTIFIER": "mntleak", "MNTLEAK_DETAIL": `{"cause":"private-tmp"}`,
	} {
		if e[k] != want {
			t.Errorf("%s = %v, want %q", k, e[k], want)
		}
	}
	if leak := j.Entries(t, 15*time.Second, "MNTLEAK_PATH="+path+"-leak"); len(leak) != 1 || leak[0]["PRIORITY"] != "4" {
		t.Errorf("leak entry %v, want one at priority 4 (warning)", leak)
	}
	if big := j.Entries(t, 15*time.Second, "MNTLEAK_PATH="+path+"-big"); len(big) != 1 {
		t.Errorf("%d entries for the big entry, want 1", len(big))
	}

	// The journal goes away (its socket removed): the finding still reaches
	// stderr, the loss is counted and said once; when a journald listens
	// at the same socket again, delivery resumes.
	j.Stop(t)
	log.Error("lost finding", zap.String("path", path+"-lost"))
	log.Error("lost finding 2", zap.String("path", path+"-lost"))
	core.Sync()
	if core.Lost() != 2 || !strings.Contains(stderr.String(), `"msg":"lost finding"`) ||
		strings.Count(stderr.String(), "journal unavailable") != 1 {
		t.Fatalf("lost %d; stderr:\n%s", core.Lost(), stderr.String())
	}
	j.Restart(t)
	log.Error("after the outage", zap.String("path", path+"-back"))
	if len(j.Entries(t, 15*time.Second, "MNTLEAK_PATH="+path+"-back")) != 1 {
		t.Error("no entry after the journal came back")
	}
	if !strings.Contains(stderr.String(), `"msg":"journal available again","lost":2`) {
		t.Errorf("recovery not logged:\n%s", stderr.String())
	}
}

// TestStalledJournal: a SIGSTOPped journald stops reading its socket. The
// logger's caller never waits for it (each send has a deadline and the
// queue is bounded), the overflow is counted, and after SIGCONT entries
// arrive again.
func TestStalledJournal(t *testing.T) {
	j := journaldtest.Start(t)
	log, core, stderr := newTee(t, j)
	path := fmt.Sprintf("/var/lib/mntleak-journald-stall/%d", time.Now().UnixNano())

	j.Pause(t)
	start := time.Now()
	for i := 0; i < 20000; i++ {
		log.Info("raw event", zap.Int("i", i), zap.String("path", path+"-flood"))
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Errorf("20000 entries to a stalled journal took %v", d)
	}
	if core.Dropped()+core.Lost() == 0 {
		t.Error("nothing dropped nor lost while the journal was stopped")
	}
	t.Logf("stalled: %d dropped at the queue, %d sends failed, in %v", core.Dropped(), core.Lost(), time.Since(start))

	j.Resume(t)
	// Let the sender work through what is left of the flood.
	for i := 0; i < 200 && core.Sync() != nil; i++ {
	}
	log.Error("after the stall", zap.String("finding", "failure"), zap.String("path", path))
	if len(j.Entries(t, 10*time.Second, "MNTLEAK_PATH="+path)) != 1 {
		t.Errorf("no entry after SIGCONT; stderr tail:\n%s", tail(stderr.String(), 5))
	}
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}
