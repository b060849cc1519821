package finding_test

import (
	"bufio"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/mntleak/mntleak/finding"
)

// goldenFindings are the findings of every golden file (the scenarios'
// findings.golden and any *.golden under correlate/testdata): each JSON
// line of them, by file.
func goldenFindings(t *testing.T) map[string][]*finding.Finding {
	t.Helper()
	var files []string
	for _, pat := range []string{"../e2e/scenarios/*/findings.golden", "../correlate/testdata/*.golden", "../correlate/testdata/*/*.golden"} {
		m, err := filepath.Glob(pat)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 10 {
		t.Fatalf("only %d golden files", len(files))
	}
	out := map[string][]*finding.Finding{}
	for _, name := range files {
		fh, err := os.Open(name)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(fh)
		sc.Buffer(nil, 16<<20)
		for sc.Scan() {
			if !strings.HasPrefix(sc.Text(), "{") {
				continue // the finding's line, or the blank line after it
			}
			var f finding.Finding
			if err := json.Unmarshal(sc.Bytes(), &f); err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			out[name] = append(out[name], &f)
		}
		fh.Close()
		if err := sc.Err(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return out
}

// checkHeadline says what is wrong with a finding's headline: longer than
// HeadlineLimit, more than one line, or not naming its holder (the
// actor's comm[pid] and namespace, else the holder's namespace) and its
// cause.
func checkHeadline(f *finding.Finding) []string {
	h := f.Headline()
	var wrong []string
	if n := utf8.RuneCountInString(h); n > finding.HeadlineLimit {
		wrong = append(wrong, "longer than the limit")
	}
	if strings.ContainsAny(h, "\n\r\x1b") {
		wrong = append(wrong, "not one line")
	}
	if !strings.HasSuffix(h, " [cause: "+f.Cause.String()+"]") {
		wrong = append(wrong, "no cause")
	}
	if !utf8.ValidString(h) {
		wrong = append(wrong, "a rune cut")
	}
	if cutInAWord(h) {
		wrong = append(wrong, "cut in a word")
	}
	holder := "no holder found"
	if hd, a := f.Actor(); a != nil {
		holder = finding.Escape(finding.ProcName(a.Comm, a.PID))
		if !strings.Contains(h, finding.NSName(hd.MntNS)) {
			wrong = append(wrong, "no holder namespace")
		}
	} else if hd != nil {
		holder = finding.NSName(hd.MntNS)
	}
	if !strings.Contains(h, holder) {
		wrong = append(wrong, "no holder ("+holder+")")
	}
	return wrong
}

// cutInAWord reports whether a "…" of h stands for the rest or the start
// of a word: a letter or digit right before or after it.
func cutInAWord(h string) bool {
	wordRune := func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
	for rest := h; ; {
		i := strings.Index(rest, "…")
		if i < 0 {
			return false
		}
		before, _ := utf8.DecodeLastRuneInString(rest[:i])
		after, _ := utf8.DecodeRuneInString(rest[i+len("…"):])
		if wordRune(before) || wordRune(after) {
			return true
		}
		rest = rest[i+len("…"):]
	}
}

// TestGoldenHeadlines: every golden finding's headline is one line of at
// most HeadlineLimit characters that names its holder and its cause, and
// its detail lines carry the summary, the fix and the release command.
func TestGoldenHeadlines(t *testing.T) {
	n := 0
	for name, fs := range goldenFindings(t) {
		for _, f := range fs {
			n++
			if wrong := checkHeadline(f); len(wrong) > 0 {
				t.Errorf("%s: headline %s (%d characters):\n%s", name, strings.Join(wrong, ", "), utf8.RuneCountInString(f.Headline()), f.Headline())
			}
			block := f.Block()
			for _, want := range []string{finding.Escape(f.Summary), finding.Escape(f.Fix), finding.Escape(f.Release)} {
				if !strings.Contains(block, want) {
					t.Errorf("%s: the block lacks %q:\n%s", name, want, block)
				}
			}
			if strings.Count(block, "\n") != 1+len(f.Details()) {
				t.Errorf("%s: the block is not the headline and one line per detail:\n%s", name, block)
			}
		}
	}
	if n < 16 {
		t.Fatalf("only %d golden findings", n)
	}
	t.Logf("%d golden findings", n)
}

// TestHeadlineOfLongNames: names at their longest (a pod name of 253
// characters, a namespace of 63, a path of 4 kB, a comm with escapes)
// still give a headline within the limit, with its holder and cause.
func TestHeadlineOfLongNames(t *testing.T) {
	long := strings.Repeat("a", 253)
	path := "/var/lib/kubelet/pods/" + strings.Repeat("d/", 2000) + "vol"
	w := &finding.Workload{ContainerID: "c", Pod: long, Namespace: strings.Repeat("n", 63), PodContainer: long}
	ref := finding.ProcRef{PID: 4194304, Comm: "ev\x1bil\ncomm", Workload: w}
	for _, kind := range []finding.FindingKind{finding.KindFailure, finding.KindLeak, finding.KindHeld} {
		f := &finding.Finding{
			Kind: kind, Cause: finding.CauseSharedPropagation,
			Call:   finding.Call{PID: 7, Comm: "umount", Syscall: "umount2", Errno: "EBUSY", MntNS: 1},
			Object: finding.Object{Path: path, Dev: 1<<20 | 3},
			Stuck:  &finding.StuckPod{UID: "u", Name: long, Namespace: "default", VolumeText: "volume " + long + " (emptyDir)"},
			Others: []finding.Object{{Path: path}},
			Holders: []finding.Holder{{MntNS: 4026532290, Where: path, Processes: []finding.ProcRef{ref},
				Pins: []finding.PinRef{{ProcRef: ref, MntNS: 4026532290, Pin: "cwd", Path: path}}}},
			Summary: "the sentence", Fix: "the fix",
		}
		f.Holders[0].Actor = f.Holders[0].ChooseActor()
		if wrong := checkHeadline(f); len(wrong) > 0 {
			t.Errorf("%s: headline %s (%d characters):\n%s", kind, strings.Join(wrong, ", "), utf8.RuneCountInString(f.Headline()), f.Headline())
		}
	}
}

// TestHeadlineCutAtAWord: a headline too long for its holder and object
// (issue 29's "…ume data (emptyDir)" and "(container …" on the node)
// cuts them where a word ends, with "…", never in a word nor in a
// multi-byte rune: names of Latin, Greek and CJK letters, at every
// length from fitting to far over.
func TestHeadlineCutAtAWord(t *testing.T) {
	for _, word := range []string{"csi-node", "größe-für-ünïcode", "ノード-プラグイン", "αβγδ"} {
		for extra := 0; extra <= 60; extra++ {
			name := word + strings.Repeat(" "+word, extra/len([]rune(word)))
			w := &finding.Workload{ContainerID: "c", Pod: name, Namespace: "storage", PodContainer: "main"}
			p := finding.ProcRef{PID: 29405, Comm: "sleep", Workload: w}
			f := &finding.Finding{Kind: finding.KindFailure, Cause: finding.CauseSharedPropagation,
				Call:   finding.Call{PID: 7, Comm: "kubelet", Syscall: "unlinkat", Errno: "EBUSY", MntNS: 1},
				Object: finding.Object{Path: "/var/lib/kubelet/pods/e4e7df05-c543-4e87-b804-4735ce5d69f1/volumes/kubernetes.io~empty-dir/data/" + name},
				Stuck:  &finding.StuckPod{UID: "e4e7df05", Name: "web-" + name, Namespace: "shop", VolumeText: "volume data (emptyDir)"},
				Holders: []finding.Holder{{MntNS: 4026532331, Where: "/kubelet/x", Processes: []finding.ProcRef{p},
					Actor: &finding.Actor{ProcRef: p, Role: finding.RoleMember}}}}
			for _, vol := range []string{"volume data (emptyDir)", ""} {
				f.Stuck.VolumeText = vol
				if wrong := checkHeadline(f); len(wrong) > 0 {
					t.Errorf("%q ×%d: headline %s:\n%s", word, extra, strings.Join(wrong, ", "), f.Headline())
				}
			}
		}
	}
}

// TestReadmeShowsAGoldenFinding: the README's first screen shows a real
// finding in its short form, exactly as a golden finding renders now.
func TestReadmeShowsAGoldenFinding(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, fs := range goldenFindings(t) {
		for _, f := range fs {
			if strings.Contains(string(readme), "```\n"+f.Block()+"```\n") {
				return
			}
		}
	}
	t.Error("README.md shows no golden finding's short form (finding.Block) in a fenced block, as it renders now")
}
