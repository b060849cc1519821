package qemu

import (
	"bufio"
	"encoding/json"

	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"

	"github.com/mntleak/mntleak/finding"
)

// journalEntry is one of mntleak's finding entries in the guest's journal.
type journalEntry struct {
	Message   string `json:"MESSAGE"`
	Finding   string `json:"MNTLEAK_FINDING"`
	Cause     string `json:"MNTLEAK_CAUSE"`
	HolderPID string `json:"MNTLEAK_HOLDER_PID"`
	HolderNS  string `json:"MNTLEAK_HOLDER_MNTNS"`
	Unit      string `json:"MNTLEAK_UNIT"`
	Detail    string `json:"MNTLEAK_DETAIL"`
	finding   finding.Finding
}

// want is what one scenario must have made mntleak say.
type want struct {
	kind      finding.FindingKind
	cause     finding.Cause
	syscall   string
	errno     string
	operation string   // a teardown through a control file
	names     []string // the line names these (expect keys' values, or literal text)
}

// TestLabGuest boots the guest once and checks every scenario's findings.
func TestLabGuest(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "bash", "mkfs.ext4", "debugfs")
	dir := t.TempDir()
	bin := filepath.Join(dir, "mntleak")
	build := exec.Command("go", "build", "-o", bin, "./cmd/mntleak")
	build.Dir = "../.."
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("static build: %v\n%s", err, out)
	}
	results := filepath.Join(dir, "results")
	start := time.Now()
	run := exec.Command("bash", "lab.sh", "run", bin, results)
	if out, err := run.CombinedOutput(); err != nil {
		serial, _ := os.ReadFile(filepath.Join(results, "serial.log"))
		t.Fatalf("lab run: %v\n%s\nserial log tail:\n%s", err, out, tail(string(serial), 40))
	}
	out := filepath.Join(results, "out")
	t.Logf("guest run in %s; kernel %s, pid 1 %s", time.Since(start).Round(time.Second), read(t, out, "kernel"), read(t, out, "pid1"))
	version := read(t, out, "version.txt")
	t.Logf("mntleak version in the guest:\n%s", version)
	for _, w := range []string{"ring buffer: yes", "syscalls:    10 of 10 present", "kprobes:     yes", "fentry:      yes"} {
		if !strings.Contains(version, w) {
			t.Errorf("guest version lacks %q", w)
		}
	}
	entries := journal(t, filepath.Join(out, "journal.json"))
	for _, e := range entries {
		t.Log(e.Message)
	}
	tests := []struct {
		scenario string
		want     []want
	}{
		{"1-privatetmp", []want{
			{kind: finding.KindLeak, cause: finding.CausePrivateTmp, syscall: "umount2", names: []string{"unit"}},
			{kind: finding.KindFailure, cause: finding.CausePrivateTmp, syscall: "openat", errno: "EBUSY", names: []string{"unit", "device"}},
		}},
		{"2-mountflags-restart", []want{
			{kind: finding.KindFailure, cause: finding.CauseMountflagsRestart, syscall: "umount2", errno: "EINVAL",
				names: []string{"unit", "old_ns", "new_ns"}},
		}},
		{"3-devicemapper", []want{
			{kind: finding.KindFailure, cause: finding.CauseUnshare, syscall: "ioctl", errno: "EBUSY", operation: "dmsetup remove labdm",
				names: []string{"unit", "device"}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.scenario, func(t *testing.T) {
			rc := strings.Fields(read(t, out, tt.scenario+".rc"))
			log := read(t, out, tt.scenario+".log")
			if len(rc) != 2 || rc[0] != "0" {
				t.Fatalf("scenario exited %v:\n%s", rc, log)
			}
			t.Logf("scenario ran %ss in the guest", rc[1])
			exp := expectations(t, filepath.Join(out, tt.scenario+".expect"))
			for i, w := range tt.want {
				e := find(entries, w, exp)
				if e == nil {
					t.Errorf("no %s %s finding (%s %s) naming %v", w.kind, w.cause, w.syscall, w.errno, w.names)
					continue
				}
				if _, a := e.finding.Actor(); a == nil || strconv.Itoa(a.PID) != exp["holder_pid"] || e.HolderPID != exp["holder_pid"] || e.HolderNS != exp["holder_ns"] {
					t.Errorf("finding %d: actor %+v, holder_pid %s in mnt:[%s]; want %s in mnt:[%s]: %s", i, a, e.HolderPID, e.HolderNS, exp["holder_pid"], exp["holder_ns"], e.Message)
				}
			}
		})
	}
	for _, c := range []string{"private-tmp", "mountflags-restart"} {
		if n, _ := strconv.Atoi(read(t, out, "journalctl-"+c+".count")); n == 0 {
			t.Errorf("journalctl MNTLEAK_CAUSE=%s found nothing in the guest's journal", c)
		}
	}
}

// find returns the entry that says what w wants, naming every expected value.
func find(entries []*journalEntry, w want, exp map[string]string) *journalEntry {
	for _, e := range entries {
		f := &e.finding
		if f.Kind != w.kind || f.Cause != w.cause || f.Call.Syscall != w.syscall || f.Call.Errno != w.errno || e.Cause != w.cause.String() {
			continue
		}
		if w.operation != "" && (f.Object.Operation != w.operation || f.Object.Path != exp["device"]) {
			continue
		}
		ok := true
		for _, k := range w.names {
			v := exp[k]
			if strings.HasSuffix(k, "_ns") {
				v = "mnt:[" + v + "]"
			}
			ok = ok && v != "" && strings.Contains(e.Message, v)
		}
		if ok {
			return e
		}
	}
	return nil
}

func journal(t *testing.T, path string) []*journalEntry {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []*journalEntry
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e journalEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if e.Finding == "" {
			continue
		}
		if err := json.Unmarshal([]byte(e.Detail), &e.finding); err != nil {
			t.Fatalf("finding detail %q: %v", e.Detail, err)
		}
		out = append(out, &e)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func expectations(t *testing.T, path string) map[string]string {
	t.Helper()
	exp := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, path)), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			exp[k] = v
		}
	}
	return exp
}

func read(t *testing.T, dir, name string) string {
	t.Helper()
	return strings.TrimSpace(readFile(t, filepath.Join(dir, name)))
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("guest result: %v", err)
	}
	return string(b)
}

func tail(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
