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

	"github.com/mntleak/mntleak/e2e/findingset"
	"github.com/mntleak/mntleak/e2e/oraclecheck"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

// journalEntry is one of mntleak's finding entries in the guest's journal.
type journalEntry struct {
	Message   string `json:"MESSAGE"`         // the headline
	Summary   string `json:"MNTLEAK_SUMMARY"` // the long line
	Finding   string `json:"MNTLEAK_FINDING"`
	Cause     string `json:"MNTLEAK_CAUSE"`
	HolderPID string `json:"MNTLEAK_HOLDER_PID"`
	HolderNS  string `json:"MNTLEAK_HOLDER_MNTNS"`
	Unit      string `json:"MNTLEAK_UNIT"`
	Detail    string `json:"MNTLEAK_DETAIL"`
	Realtime  string `json:"__REALTIME_TIMESTAMP"` // microseconds since the epoch
	finding   finding.Finding
}

// want is one finding a scenario must have made mntleak say, all of it:
// the process named is the scenario's holder_pid (a member of holder_ns,
// whose creation the finding cites), and the fix names it (fixHolder) or
// no process (a unit to restart).
type want struct {
	kind      finding.FindingKind
	cause     finding.Cause
	syscall   string
	errno     string
	operation string   // a teardown through a control file
	names     []string // the line names these (expect keys' values, or literal text)
	fixHolder bool
}

// labScenarios are the guest's scenarios and the findings each must make
// mntleak say, on every kernel of the lab.
var labScenarios = []struct {
	scenario string
	want     []want
}{
	// A PrivateTmp unit's fix restarts the unit: it names no process.
	{"1-privatetmp", []want{
		{kind: finding.KindLeak, cause: finding.CausePrivateTmp, syscall: "umount2", names: []string{"unit"}},
		{kind: finding.KindFailure, cause: finding.CausePrivateTmp, syscall: "openat", errno: "EBUSY", names: []string{"unit", "device"}},
	}},
	{"2-mountflags-restart", []want{
		{kind: finding.KindFailure, cause: finding.CauseMountflagsRestart, syscall: "umount2", errno: "EINVAL",
			names: []string{"unit", "old_ns", "new_ns"}, fixHolder: true},
	}},
	// Under the perf buffer (the scenario's lab-daemon-args line).
	{"3-devicemapper", []want{
		{kind: finding.KindLeak, cause: finding.CauseUnshare, syscall: "umount2", names: []string{"unit"}, fixHolder: true},
		{kind: finding.KindFailure, cause: finding.CauseUnshare, syscall: "ioctl", errno: "EBUSY", operation: "dmsetup remove labdm",
			names: []string{"unit", "device"}, fixHolder: true},
	}},
}

// TestLabGuest boots one guest a kernel of the lab (labKernels) in turn
// and checks what the kernel offers, what mntleak chose, and every
// scenario's findings in each; the results table collects them.
func TestLabGuest(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "bash", "mkfs.ext4", "debugfs")
	dir := t.TempDir()
	bins := labBinaries{mntleak: filepath.Join(dir, "mntleak"), oracle: filepath.Join(dir, "oracle"), probe: filepath.Join(dir, "probe")}
	for b, pkg := range map[string]string{bins.mntleak: "./cmd/mntleak", bins.oracle: "./e2e/qemu/guest/oracle", bins.probe: "./e2e/qemu/guest/probe"} {
		if os.Getenv("LAB_RECHECK") == "1" {
			break
		}
		build := exec.Command("go", "build", "-o", b, pkg)
		build.Dir = "../.."
		build.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("static build of %s: %v\n%s", pkg, err, out)
		}
	}
	table := &labResults{}
	for _, k := range labKernels(t) {
		t.Run(k.name, func(t *testing.T) { runGuest(t, k, bins, filepath.Join(resultsDir, k.name), table) })
	}
	table.write(t)
}

// labBinaries are the static programs the payload carries.
type labBinaries struct{ mntleak, oracle, probe string }

// labRun boots kernel k's guest with lab.sh; its results go to results.
func labRun(k labKernel, bins labBinaries, results string) ([]byte, error) {
	run := exec.Command("bash", "lab.sh", "run", bins.mntleak, results, bins.oracle, bins.probe)
	run.Env = append(os.Environ(), "LAB_KERNEL="+k.name)
	return run.CombinedOutput()
}

// resultsDir keeps each kernel's last run (bin/lab/KERNEL: the guest's
// out/ and serial log), which LAB_RECHECK=1 checks again without a boot.
const resultsDir = "../../bin/lab"

// runGuest boots kernel k's guest and checks its run.
func runGuest(t *testing.T, k labKernel, bins labBinaries, results string, table *labResults) {
	start := time.Now()
	if os.Getenv("LAB_RECHECK") == "1" {
		t.Logf("LAB_RECHECK=1: checking the run saved in %s, no boot", results)
	} else if err := os.RemoveAll(results); err != nil {
		t.Fatal(err)
	} else if out, err := labRun(k, bins, results); err != nil {
		serial, _ := os.ReadFile(filepath.Join(results, "serial.log"))
		runLog, _ := os.ReadFile(filepath.Join(results, "out", "run.log"))
		t.Fatalf("lab run: %v\n%s\nserial log tail:\n%s\nthe guest's run.log tail:\n%s", err, out, tail(string(serial), 40), tail(string(runLog), 40))
	} else if err := os.WriteFile(filepath.Join(results, "wall"), []byte(time.Since(start).Round(time.Second).String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(results, "out")
	g := guestRun{kernel: k.name, release: read(t, out, "kernel"), wall: read(t, results, "wall"),
		boot: read(t, out, "boot-seconds"), version: read(t, out, "version.txt")}
	t.Logf("guest run in %s (booted to lab-test in %s s); kernel %s, pid 1 %s", g.wall, g.boot, g.release, read(t, out, "pid1"))
	t.Logf("mntleak version in the guest:\n%s", g.version)
	if pid1 := read(t, out, "pid1"); pid1 != "systemd" {
		t.Errorf("pid 1 is %q, want systemd", pid1)
	}
	g.probe = read(t, out, "kernel-probe.txt")
	k.check(t, g.release, g.version, g.probe)
	entries := journal(t, filepath.Join(out, "journal.json"))
	for _, e := range entries {
		t.Log(e.Summary)
	}
	// make test runs the guest on the tracepoints; make lab (LAB_HOOKS=both)
	// on the path auto takes, and on a kernel with trampolines the
	// tracepoints too (guest/run.sh).
	both := os.Getenv("LAB_HOOKS") == "both"
	hooks := "tracepoint"
	if auto := autoHooks(t, g.version); both {
		hooks = auto
	}
	byPath := map[string]map[string][]*journalEntry{}
	byPath[hooks] = checkScenarios(t, out, entries, hooks, &g)
	// A kernel with trampolines runs every scenario on the tracepoint path
	// too (guest/run.sh): the same findings, numbers aside.
	if tp := filepath.Join(out, "tracepoint"); both && hooks == "trampoline" {
		t.Run("tracepoint", func(t *testing.T) {
			var other guestRun
			byPath["tracepoint"] = checkScenarios(t, tp, entries, "tracepoint", &other)
			for _, tt := range labScenarios {
				sameFindings(t, tt.scenario, byPath["trampoline"][tt.scenario], byPath["tracepoint"][tt.scenario])
			}
		})
	} else if _, err := os.Stat(tp); err == nil {
		t.Errorf("the guest ran a second tracepoint pass, but its first pass ran on %s (LAB_HOOKS=%q)", hooks, os.Getenv("LAB_HOOKS"))
	}
	verdicts(t, filepath.Join(out, "oracle.jsonl"), read(t, out, "oracle.rc"))
	for _, c := range []string{"private-tmp", "mountflags-restart"} {
		if n, _ := strconv.Atoi(read(t, out, "journalctl-"+c+".count")); n == 0 {
			t.Errorf("journalctl MNTLEAK_CAUSE=%s found nothing in the guest's journal", c)
		}
	}
	g.failed = t.Failed()
	table.add(g)
}

// checkScenarios checks every scenario's results in dir (one path's run):
// the daemon attached on hooks, and the exact findings. It returns each
// scenario's findings.
func checkScenarios(t *testing.T, dir string, entries []*journalEntry, hooks string, g *guestRun) map[string][]*journalEntry {
	found := map[string][]*journalEntry{}
	for _, tt := range labScenarios {
		t.Run(tt.scenario, func(t *testing.T) {
			rc := strings.Fields(read(t, dir, tt.scenario+".rc"))
			log := read(t, dir, tt.scenario+".log")
			if len(rc) != 2 || rc[0] != "0" {
				t.Fatalf("scenario exited %v:\n%s", rc, log)
			}
			t.Logf("scenario ran %ss in the guest", rc[1])
			buffer := scenarioBuffer(t, tt.scenario)
			attached := read(t, dir, tt.scenario+".attached")
			checkBuffer(t, attached, buffer)
			checkHooks(t, attached, hooks)
			exp := expectations(t, filepath.Join(dir, tt.scenario+".expect"))
			got := ofScenario(t, entries, exp, read(t, dir, tt.scenario+".window"))
			var findings []*finding.Finding
			for _, e := range got {
				findings = append(findings, &e.finding)
			}
			findingset.Exact(t, findings, wants(t, tt.want, exp), findingset.Remote())
			for _, w := range tt.want {
				checkEntry(t, got, w, exp)
			}
			found[tt.scenario] = got
			g.scenarios = append(g.scenarios, scenarioRun{name: tt.scenario, seconds: rc[1], buffer: buffer, entries: got, passed: !t.Failed()})
		})
	}
	return found
}

// ofScenario returns the entries of the scenario's window (its start and
// end, 3 s after it ran, in the journal's microseconds) about its objects:
// its device, its holder namespace and, for a restart, both generations.
func ofScenario(t *testing.T, entries []*journalEntry, exp map[string]string, window string) []*journalEntry {
	t.Helper()
	span := strings.Fields(window)
	if len(span) != 2 {
		t.Fatalf("scenario window %q, want start and end", window)
	}
	var objs findingset.Objects
	if d := exp["device"]; d != "" {
		objs.Paths = append(objs.Paths, d)
	}
	for _, k := range []string{"holder_ns", "old_ns", "new_ns"} {
		if ns, err := strconv.ParseUint(exp[k], 10, 32); err == nil {
			objs.NS = append(objs.NS, uint32(ns))
		}
	}
	var out []*journalEntry
	for _, e := range entries {
		if inWindow(e.Realtime, span[0], span[1]) && objs.Names(&e.finding) {
			out = append(out, e)
		}
	}
	return out
}

// inWindow compares decimal microsecond counts.
func inWindow(at, start, end string) bool {
	a, err1 := strconv.ParseInt(at, 10, 64)
	s, err2 := strconv.ParseInt(start, 10, 64)
	e, err3 := strconv.ParseInt(end, 10, 64)
	return err1 == nil && err2 == nil && err3 == nil && a >= s && a <= e
}

// wants are the scenario's findings in findingset's terms.
func wants(t *testing.T, ws []want, exp map[string]string) []findingset.Want {
	t.Helper()
	pid, err := strconv.Atoi(exp["holder_pid"])
	if err != nil {
		t.Fatalf("holder_pid %q: %v", exp["holder_pid"], err)
	}
	ns, err := strconv.ParseUint(exp["holder_ns"], 10, 32)
	if err != nil {
		t.Fatalf("holder_ns %q: %v", exp["holder_ns"], err)
	}
	var out []findingset.Want
	for _, w := range ws {
		fw := findingset.Want{Kind: w.kind, Syscall: w.syscall, Cause: w.cause, PID: pid, Role: finding.RoleMember, NS: uint32(ns)}
		if w.fixHolder {
			fw.Fix = pid
		}
		out = append(out, fw)
	}
	return out
}

// checkEntry checks what findingset does not: the errno, the operation,
// what the line names, and the journal's own fields.
func checkEntry(t *testing.T, got []*journalEntry, w want, exp map[string]string) {
	t.Helper()
	for _, e := range got {
		f := &e.finding
		if f.Kind != w.kind || f.Call.Syscall != w.syscall {
			continue
		}
		if f.Call.Errno != w.errno || e.Cause != w.cause.String() {
			t.Errorf("%s %s: errno %q, MNTLEAK_CAUSE %q; want %q, %q: %s", w.kind, w.syscall, f.Call.Errno, e.Cause, w.errno, w.cause, e.Message)
		}
		if w.operation != "" && (f.Object.Operation != w.operation || f.Object.Path != exp["device"]) {
			t.Errorf("%s %s: operation %q on %s, want %q on %s", w.kind, w.syscall, f.Object.Operation, f.Object.Path, w.operation, exp["device"])
		}
		for _, k := range w.names {
			v := exp[k]
			if strings.HasSuffix(k, "_ns") {
				v = "mnt:[" + v + "]"
			}
			if v == "" || !strings.Contains(e.Summary, v) {
				t.Errorf("%s %s does not name %s %q: %s", w.kind, w.syscall, k, v, e.Summary)
			}
		}
		if e.HolderPID != exp["holder_pid"] || e.HolderNS != exp["holder_ns"] {
			t.Errorf("%s %s: MNTLEAK_HOLDER_PID %s in MNTLEAK_HOLDER_MNTNS %s; want %s in %s", w.kind, w.syscall, e.HolderPID, e.HolderNS, exp["holder_pid"], exp["holder_ns"])
		}
	}
}

// verdicts reads the guest oracle's comparisons (one oraclecheck.Verdict a
// line) and counts them as this test's: a disagreement fails it.
func verdicts(t *testing.T, path, rc string) {
	t.Helper()
	if rc != "0" {
		t.Errorf("the guest's oracle exited %s: %s", rc, readFile(t, filepath.Join(filepath.Dir(path), "oracle.err")))
	}
	var vs []oraclecheck.Verdict
	for _, line := range strings.Split(strings.TrimSpace(readFile(t, path)), "\n") {
		if line == "" {
			continue
		}
		var v oraclecheck.Verdict
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		vs = append(vs, v)
	}
	if len(vs) == 0 {
		t.Errorf("the guest's oracle compared no finding")
	}
	oraclecheck.New(t).Verdicts(t, vs)
	t.Logf("the guest's oracle: %d findings compared", len(vs))
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
	exp, err := parseExpect(readFile(t, path))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
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
