package deploy

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/finding"
)

// npdConfig is node-problem-detector's system-log monitor configuration,
// the fields mntleak's uses.
type npdConfig struct {
	Plugin       string            `json:"plugin"`
	PluginConfig map[string]string `json:"pluginConfig"`
	BufferSize   int               `json:"bufferSize"`
	Source       string            `json:"source"`
	Conditions   []struct{ Type, Reason, Message string }
	Rules        []struct {
		Type, Condition, Reason, Pattern string
	}
}

// npdMatch is what node-problem-detector does with a rule: the pattern,
// anchored at the end, is searched in the buffered messages joined by
// newlines, the newest last (its log_buffer.go).
func npdMatch(re *regexp.Regexp, buffer []string) bool {
	return re.FindStringIndex(strings.Join(buffer, "\n")) != nil
}

// goldenLines are the finding headlines (the journal's MESSAGE) of every
// recorded scenario's golden findings (their JSON form, made into
// headlines as the daemon does), by finding kind.
func goldenLines(t *testing.T) map[finding.FindingKind][]string {
	t.Helper()
	files, err := filepath.Glob("../e2e/scenarios/*/findings.golden")
	if err != nil || len(files) == 0 {
		t.Fatalf("no golden findings: %v", err)
	}
	out := map[finding.FindingKind][]string{}
	for _, file := range files {
		f, err := os.Open(file)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 16<<20)
		for sc.Scan() {
			if !strings.HasPrefix(sc.Text(), "{") {
				continue // the same findings as lines, after the JSON
			}
			var fd finding.Finding
			if err := json.Unmarshal(sc.Bytes(), &fd); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			out[fd.Kind] = append(out[fd.Kind], fd.Headline())
		}
		f.Close()
	}
	return out
}

// TestNodeProblemDetector: the monitor reads mntleak's journal entries
// (SYSLOG_IDENTIFIER mntleak), raises the MountLeak condition on every
// leak finding of the goldens and a MountBusy event on every failure
// finding, one rule each, whatever was logged before; the daemon's
// ordinary lines, a finding line cut short and other programs' messages
// match no rule.
func TestNodeProblemDetector(t *testing.T) {
	b, err := os.ReadFile("node-problem-detector/mntleak-monitor.json")
	if err != nil {
		t.Fatal(err)
	}
	var cfg npdConfig
	if err := json.Unmarshal(b, &cfg); err != nil {
		t.Fatalf("mntleak-monitor.json: %v", err)
	}
	if cfg.Plugin != "journald" || cfg.PluginConfig["source"] != "mntleak" || cfg.BufferSize < 1 {
		t.Errorf("plugin %q source %q bufferSize %d: want journald, SYSLOG_IDENTIFIER mntleak", cfg.Plugin, cfg.PluginConfig["source"], cfg.BufferSize)
	}
	if len(cfg.Conditions) != 1 || cfg.Conditions[0].Type != "MountLeak" {
		t.Fatalf("conditions %+v: want MountLeak", cfg.Conditions)
	}
	rules := map[string]*regexp.Regexp{}
	for _, r := range cfg.Rules {
		re, err := regexp.Compile(r.Pattern + `\z`)
		if err != nil {
			t.Fatalf("rule %s: %v", r.Reason, err)
		}
		if r.Type == "permanent" && r.Condition != "MountLeak" {
			t.Errorf("permanent rule %s sets condition %q", r.Reason, r.Condition)
		}
		rules[r.Reason] = re
	}
	before := []string{"tracing", "serving metrics", "events lost: the buffer was full"}
	matching := func(buffer []string) []string {
		var got []string
		for reason, re := range rules {
			if npdMatch(re, buffer) {
				got = append(got, reason)
			}
		}
		return got
	}
	lines := goldenLines(t)
	t.Logf("%d leak and %d failure finding lines from the goldens", len(lines[finding.KindLeak]), len(lines[finding.KindFailure]))
	for kind, want := range map[finding.FindingKind]string{finding.KindLeak: "MountLeaked", finding.KindFailure: "MountBusy"} {
		if len(lines[kind]) == 0 {
			t.Fatalf("the goldens have no %s finding", kind)
		}
		for _, line := range lines[kind] {
			for _, buffer := range [][]string{{line}, append(append([]string{}, before...), line)} {
				if got := matching(buffer); len(got) != 1 || got[0] != want {
					t.Errorf("%s finding matched %v, want [%s]:\n%s", kind, got, want, line)
				}
			}
			// The finding is not the newest message: no new problem.
			if got := matching([]string{line, "tracing"}); len(got) != 0 {
				t.Errorf("a finding followed by an ordinary line matched %v", got)
			}
			cut := line[:strings.Index(line, " [cause: ")]
			if got := matching([]string{cut}); len(got) != 0 {
				t.Errorf("a line without its cause and fix matched %v: %s", got, cut)
			}
		}
	}
	for _, ordinary := range []string{
		"tracing", "BPF programs attached", "serving metrics", "stopped",
		"events lost: the buffer was full",
		"missing capabilities: other processes' /proc entries may be unreadable, so findings may lack holders and command lines",
		"missing capabilities: mount namespaces no process runs in (kept by a bind of their nsfs file) cannot be read, so a copy held there is not found",
		"persistent lineage: skipped damaged data", "state dir not locked: a second daemon could share it",
		"output overloaded: dropped lines the output did not take in time (the reader does not wait)",
		"umount: /var/lib/kubelet/pods/x: target is busy.",
		"EBUSY is what rmdir returned; see LEAK handling in the docs [cause: none]",
		"kubelet: UnmountVolume.TearDown failed for volume \"pvc-1\": unmount failed: exit status 32",
	} {
		if got := matching([]string{ordinary}); len(got) != 0 {
			t.Errorf("an ordinary line matched %v: %s", got, ordinary)
		}
	}
}
