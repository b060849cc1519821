package k8s

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/k8snode"
)

var update = flag.Bool("update", false, "rewrite the Kubernetes section of docs/incidents.md from this run")

// docsPath is the document whose Kubernetes section the tests write.
const docsPath = "../../docs/incidents.md"

// docBlocks are the generated blocks of docs/incidents.md, one per
// scenario run, between <!-- kubee2e:NAME --> and <!-- /kubee2e:NAME -->.
func docBlocks() []string {
	return []string{
		"bidirectional", "bidirectional-beside-a-peer", "pinned", "not-pinned",
		"churn", "private-namespace-process", "kubelet-hostpath-none",
	}
}

// run is what one scenario's run shows, for its block of the document.
type run struct {
	manifests []k8snode.Manifest
	also      string   // what the manifests shown leave out
	findings  []logged // the findings about the scenario's pods
	journal   map[string]any
	commands  [][]string // kubectl commands whose output the block shows
	kubelet   string     // a line of the kubelet's log
	others    []logged   // findings of the scenario that are not about its pods
}

// write replaces the block name of the document with what r shows, when
// the test runs with -update and passed.
func (r *run) write(t *testing.T, l *lab, name string) {
	t.Helper()
	if !*update || t.Failed() {
		return
	}
	var b strings.Builder
	var uts unix.Utsname
	_ = unix.Uname(&uts)
	fmt.Fprintf(&b, "A run on %s (kernel %s, Kubernetes v%s). The pods, as applied:\n\n```yaml\n",
		time.Now().UTC().Format("2006-01-02"), unix.ByteSliceToString(uts.Release[:]), k8snode.Version)
	for i, m := range r.manifests {
		if i > 0 {
			b.WriteString("---\n")
		}
		b.Write(m.YAML())
	}
	b.WriteString("```\n")
	if r.also != "" {
		b.WriteString("\n(" + r.also + ".)\n")
	}
	b.WriteString("\nWhat mntleak logs (level, headline and detail lines, as a terminal shows them):\n\n```\n")
	if len(r.findings) == 0 {
		b.WriteString("(no finding about these pods)\n")
	}
	for _, f := range r.findings {
		b.WriteString(f.Short() + "\n")
	}
	b.WriteString("```\n")
	if r.journal != nil {
		b.WriteString("\nIts journal entry (`journalctl -o verbose MNTLEAK_FINDING_ID=" + r.findings[0].FindingID + "`, the fields mntleak sets):\n\n```\n")
		b.WriteString(journalText(r.journal))
		b.WriteString("```\n")
	}
	if len(r.others) > 0 {
		b.WriteString("\nThe other findings of the run, each checked against what the kernel showed when the holder's namespace was made (it copied the mount, private):\n\n```\n")
		for _, f := range r.others {
			b.WriteString(f.Short() + "\n")
		}
		b.WriteString("```\n")
	}
	if r.kubelet != "" {
		b.WriteString("\nThe kubelet's log, the only other place the failure shows:\n\n```\n" + r.kubelet + "\n```\n")
	}
	for _, args := range r.commands {
		b.WriteString("\n```\n$ kubectl " + strings.Join(args, " ") + "\n" + kubectlText(l.n, args) + "```\n")
	}
	writeBlock(t, name, b.String())
}

// journalText is the journal entry's fields as journalctl -o verbose
// shows them, the long line (MNTLEAK_SUMMARY) and the JSON detail
// shortened.
func journalText(e map[string]any) string {
	var keys []string
	for k := range e {
		if strings.HasPrefix(k, "MNTLEAK_") || k == "PRIORITY" || k == "SYSLOG_IDENTIFIER" || k == "MESSAGE" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		v := fmt.Sprint(e[k])
		switch k {
		case "MNTLEAK_SUMMARY":
			v = "(the finding's long line)"
		case "MNTLEAK_DETAIL":
			v = "(the whole finding as JSON)"
		}
		fmt.Fprintf(&b, "    %s=%s\n", k, v)
	}
	return b.String()
}

// kubectlText is kubectl's output (both streams: "No resources found"
// is on stderr), or the error.
func kubectlText(n *k8snode.Node, args []string) string {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, k8snode.Bin("kubectl"), append([]string{"--kubeconfig", n.Kubeconfig}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Sprintf("%s(%v)\n", out, err)
	}
	return string(out)
}

// writeBlock replaces the text between the block's markers.
func writeBlock(t *testing.T, name, body string) {
	t.Helper()
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	open, end := "<!-- kubee2e:"+name+" -->\n", "<!-- /kubee2e:"+name+" -->"
	i, j := strings.Index(doc, open), strings.Index(doc, end)
	if i < 0 || j < i {
		t.Fatalf("%s has no block %s ... %s", docsPath, open, end)
	}
	doc = doc[:i+len(open)] + body + doc[j:]
	if err := os.WriteFile(docsPath, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDocs: docs/incidents.md has every block the scenarios write, each
// filled by a run (go test -update ./e2e/k8s rewrites them), in order.
func TestDocs(t *testing.T) {
	if *update {
		t.Skip("the scenarios of this run write the blocks")
	}
	b, err := os.ReadFile(docsPath)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	at := 0
	for _, name := range docBlocks() {
		open, end := "<!-- kubee2e:"+name+" -->\n", "<!-- /kubee2e:"+name+" -->"
		i, j := strings.Index(doc, open), strings.Index(doc, end)
		switch {
		case i < 0 || j < i:
			t.Errorf("%s has no block %s ... %s", docsPath, strings.TrimSpace(open), end)
		case i < at:
			t.Errorf("%s: block %s out of order", docsPath, name)
		case !strings.Contains(doc[i:j], "What mntleak logs"):
			t.Errorf("%s: block %s is empty (go test -update ./e2e/k8s fills it)", docsPath, name)
		default:
			at = j
		}
	}
}
