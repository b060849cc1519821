package qemu

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/findingset"
	"github.com/mntleak/mntleak/e2e/testkit/findinglog"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
)

// TestLabArm64 boots Debian's arm64 cloud kernel under qemu-system-aarch64
// (arm64.sh: an initramfs of busybox and the static arm64 mntleak): the
// arm64 BPF objects load, and a private namespace's copy of a mounted loop
// device is explained twice, as a leak when the host unmounts it and as
// the cause of an exclusive open's EBUSY.
func TestLabArm64(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "bash")
	if !labSelected(t, "arm64") {
		t.Skip("LAB_KERNELS does not select arm64 (make lab does)")
	}
	results := filepath.Join(resultsDir, "arm64")
	if os.Getenv("LAB_RECHECK") == "1" {
		t.Logf("LAB_RECHECK=1: checking the run saved in %s, no boot", results)
	} else {
		runArm64(t, results)
	}
	sections := consoleSections(readFile(t, filepath.Join(results, "serial.log")))
	t.Logf("arm64 guest run in %s; kernel %s; daemon start to tracing (guest uptime s): %s", read(t, results, "wall"), sections["kernel"], sections["startup"])
	t.Logf("mntleak version in the arm64 guest:\n%s", sections["version"])
	version := strings.Split(sections["version"], "\n")
	for _, w := range []string{"btf:         true", "ring buffer: yes", "buffer:      ringbuf (what --buffer=auto uses)", "syscalls:    10 of 10 present"} {
		if !hasLine(version, w) {
			t.Errorf("arm64 mntleak version lacks %q", w)
		}
	}
	if sections["excl"] != "/dev/loop0: EBUSY" {
		t.Errorf("the exclusive open answered %q, want /dev/loop0: EBUSY", sections["excl"])
	}
	if sections["daemon.rc"] != "0" {
		t.Errorf("the daemon exited %q, want 0", sections["daemon.rc"])
	}
	lines := findinglog.AllOf(sections["log"])
	var attached bool
	var findings []*finding.Finding
	for i := range lines {
		attached = attached || lines[i].Msg == "BPF programs attached"
		if lines[i].IsFinding() {
			t.Log(lines[i].Raw)
			findings = append(findings, lines[i].Detail)
		}
	}
	if !attached {
		t.Fatalf("the arm64 BPF objects were not attached:\n%s", sections["log"])
	}
	exp := map[string]string{}
	for _, l := range strings.Split(sections["expect"], "\n") {
		if k, v, ok := strings.Cut(l, "="); ok {
			exp[k] = v
		}
	}
	pid, err := strconv.Atoi(exp["holder_pid"])
	if err != nil {
		t.Fatalf("holder_pid %q: %v", exp["holder_pid"], err)
	}
	ns, err := strconv.ParseUint(exp["holder_ns"], 10, 32)
	if err != nil {
		t.Fatalf("holder_ns %q: %v", exp["holder_ns"], err)
	}
	objs := findingset.Objects{Paths: []string{exp["device"]}, NS: []uint32{uint32(ns)}}
	got := objs.Of(findings)
	findingset.Exact(t, got, []findingset.Want{
		{Kind: finding.KindLeak, Syscall: "umount2", Cause: finding.CauseUnshare, PID: pid, Role: finding.RoleMember, NS: uint32(ns), Fix: pid},
		{Kind: finding.KindFailure, Syscall: "openat", Cause: finding.CauseUnshare, PID: pid, Role: finding.RoleMember, NS: uint32(ns), Fix: pid},
	}, findingset.Remote())
	writeArm64Doc(t, sections, lines, got, read(t, results, "wall"))
}

// writeArm64Doc rewrites docs/lab.md's arm64 blocks with -update, when the
// test passed: its mntleak version and its findings' lines.
func writeArm64Doc(t *testing.T, sections map[string]string, lines []findinglog.Line, got []*finding.Finding, wall string) {
	t.Helper()
	if !*update || t.Failed() {
		return
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Kernel `%s`, run on %s: %s for arm64.sh run (initramfs, boot, the run, power-off) under TCG.\n\n", sections["kernel"], time.Now().UTC().Format("2006-01-02"), wall)
	b.WriteString("| finding line | cause | holder |\n|---|---|---|\n")
	for _, l := range lines {
		for _, f := range got {
			if l.Detail == f {
				fmt.Fprintf(&b, "| `%s` | %s | %d in mnt:[%d] |\n", strings.ReplaceAll(l.Msg, "|", `\|`), l.Cause, l.HolderPID, l.HolderMntNS)
			}
		}
	}
	editDoc(t, func(doc string) string {
		doc = replaceBlock(t, doc, "version:arm64", "```\n"+sections["version"]+"\n```\n")
		doc = replaceBlock(t, doc, "probe:arm64", "```\n"+sections["probe"]+"\n```\n")
		return replaceBlock(t, doc, "results:arm64", b.String())
	})
}

// runArm64 builds the static arm64 mntleak and probe and boots the arm64
// guest with them; its console goes to results/serial.log.
func runArm64(t *testing.T, results string) {
	t.Helper()
	dir := t.TempDir()
	bin, probe := filepath.Join(dir, "mntleak"), filepath.Join(dir, "probe")
	for b, pkg := range map[string]string{bin: "./cmd/mntleak", probe: "./e2e/qemu/guest/probe"} {
		build := exec.Command("go", "build", "-o", b, pkg)
		build.Dir = "../.."
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOARCH=arm64")
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("static arm64 build of %s: %v\n%s", pkg, err, out)
		}
	}
	if err := os.RemoveAll(results); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if out, err := exec.Command("bash", "arm64.sh", "run", bin, probe, results).CombinedOutput(); err != nil {
		serial, _ := os.ReadFile(filepath.Join(results, "serial.log"))
		t.Fatalf("arm64 run: %v\n%s\nserial log tail:\n%s", err, out, tail(string(serial), 60))
	}
	if err := os.WriteFile(filepath.Join(results, "wall"), []byte(time.Since(start).Round(time.Second).String()), 0o644); err != nil {
		t.Fatal(err)
	}
}

// consoleSections reads what arm64-init.sh printed between "==> NAME" and
// "<== NAME" on the console (carriage returns dropped).
func consoleSections(serial string) map[string]string {
	out := map[string]string{}
	name := ""
	var body []string
	for _, l := range strings.Split(strings.ReplaceAll(serial, "\r", ""), "\n") {
		switch {
		case strings.HasPrefix(l, "==> "):
			name, body = strings.TrimPrefix(l, "==> "), nil
		case name != "" && l == "<== "+name:
			out[name] = strings.TrimSpace(strings.Join(body, "\n"))
			name = ""
		case name != "":
			body = append(body, l)
		}
	}
	return out
}
