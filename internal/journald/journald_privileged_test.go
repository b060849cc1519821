package journald_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/mntleak/mntleak/internal/journald"
	"github.com/mntleak/mntleak/internal/privtest"
)

// journal is a standalone systemd-journald the test started, or the one
// already running (then it is neither stopped nor cleaned).
type journal struct {
	cmd     *exec.Cmd
	created []string
}

func startJournal(t *testing.T) *journal {
	t.Helper()
	privtest.Require(t)
	privtest.RequireCommands(t, "/lib/systemd/systemd-journald", "journalctl")
	j := &journal{}
	if journald.Available() && exec.Command("journalctl", "-n", "0").Run() == nil {
		return j // a journal is running: use it
	}
	for _, d := range []string{"/run/systemd/journal", "/run/log/journal"} {
		if _, err := os.Stat(d); os.IsNotExist(err) {
			j.created = append(j.created, d)
		}
	}
	j.start(t)
	t.Cleanup(func() {
		j.stop(t)
		for _, d := range j.created {
			os.RemoveAll(d)
		}
	})
	return j
}

func (j *journal) start(t *testing.T) {
	t.Helper()
	if err := os.MkdirAll("/run/systemd/journal", 0o755); err != nil {
		t.Fatal(err)
	}
	j.cmd = exec.Command("/lib/systemd/systemd-journald")
	if err := j.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100 && !journald.Available(); i++ {
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(100 * time.Millisecond)
}

func (j *journal) stop(t *testing.T) {
	t.Helper()
	if j.cmd == nil {
		t.Skip("a journal not started by this test cannot be stopped")
	}
	_ = j.cmd.Process.Kill()
	_ = j.cmd.Wait()
	os.Remove(journald.SocketPath) // journald leaves it behind when killed
	j.cmd = nil
}

// entries reads back what the journal holds for a path.
func entries(t *testing.T, path string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for i := 0; i < 50; i++ {
		b, err := exec.Command("journalctl", "-o", "json", "--no-pager", "MNTLEAK_PATH="+path).Output()
		if err != nil {
			t.Fatalf("journalctl: %v", err)
		}
		out = out[:0]
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				out = append(out, m)
			}
		}
		if len(out) > 0 {
			return out
		}
		time.Sleep(50 * time.Millisecond)
	}
	return out
}

func TestFindingsReachTheJournal(t *testing.T) {
	j := startJournal(t)
	var stderr bytes.Buffer
	base := zap.New(zapcore.NewCore(zapcore.NewJSONEncoder(zap.NewProductionEncoderConfig()), zapcore.AddSync(&stderr), zap.InfoLevel))
	log, core := journald.Tee(base, zap.InfoLevel, nil)
	path := fmt.Sprintf("/var/lib/mntleak-journald-test/%d", time.Now().UnixNano())

	log.Named("correlate").Error("EBUSY openat /dev/loop3 by mkfs.ext4[4121]: still mounted in mnt:[4026532290]",
		zap.String("finding", "failure"), zap.String("cause", "private-tmp"), zap.String("syscall", "openat"),
		zap.String("errno", "EBUSY"), zap.String("path", path), zap.Int("holder_pid", 3990),
		zap.Uint32("holder_mntns", 4026532290), zap.String("leak_event", "unshare(CLONE_NEWNS) by ntpd[3990]"),
		zap.String("unit", "ntpd.service"), zap.Any("detail", map[string]any{"cause": "private-tmp"}))
	log.Named("correlate").Warn("LEAK "+path, zap.String("cause", "rprivate-bind"), zap.String("path", path+"-leak"))

	got := entries(t, path)
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
	if leak := entries(t, path+"-leak"); len(leak) != 1 || leak[0]["PRIORITY"] != "4" {
		t.Errorf("leak entry %v, want one at priority 4 (warning)", leak)
	}

	// The journal goes away: the finding still reaches stderr, the loss is
	// counted and said; when it comes back, delivery resumes.
	j.stop(t)
	log.Error("lost finding", zap.String("path", path+"-lost"))
	if core.Lost() != 1 || !strings.Contains(stderr.String(), `"msg":"lost finding"`) ||
		!strings.Contains(stderr.String(), "journal unavailable") {
		t.Fatalf("lost %d; stderr:\n%s", core.Lost(), stderr.String())
	}
	j.start(t)
	log.Error("after the outage", zap.String("path", path+"-back"))
	if len(entries(t, path+"-back")) != 1 {
		t.Error("no entry after the journal came back")
	}
	if !strings.Contains(stderr.String(), `"msg":"journal available again","lost":1`) {
		t.Errorf("recovery not logged:\n%s", stderr.String())
	}
}
