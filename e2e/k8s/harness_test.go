package k8s

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/mntleak/mntleak/e2e/k8snode"
	"github.com/mntleak/mntleak/e2e/oraclecheck"
	"github.com/mntleak/mntleak/e2e/testkit/findinglog"
	"github.com/mntleak/mntleak/e2e/testkit/journaldtest"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/sink/kubeevents"
)

// logged is one finding line of the daemon's JSON log, with its fields.
type logged = findinglog.Line

// lab is one test's node, its namespaces, the daemon under test and an
// admin client to read back what the daemon posted.
type lab struct {
	n      *k8snode.Node
	m      *mntleak
	client kubernetes.Interface
}

// mntleak is the daemon under test and its journal.
type mntleak struct {
	*privtest.Daemon
	journal *journaldtest.Journal
}

// setup brings the node up, creates the test's namespaces (deleted at
// cleanup, after its pods) and starts the real daemon pointed at the node:
// its containerd socket, kubelet root and name, and the API server as the
// ServiceAccount of testdata/rbac.yaml, posting Events; findings also go to
// a journal of the test's own.
func setup(t *testing.T, namespaces ...string) *lab {
	t.Helper()
	n := k8snode.Up(t)
	cfg, err := clientcmd.BuildConfigFromFlags("", n.Kubeconfig)
	if err != nil {
		t.Fatalf("kubeconfig %s: %v", n.Kubeconfig, err)
	}
	cfg.Timeout = 10 * time.Second // each request, as the daemon's
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range namespaces {
		n.CreateNamespace(t, ns)
	}
	kubeconfig := daemonKubeconfig(t, n)
	j := journaldtest.Start(t)
	dir := t.TempDir()
	d := privtest.StartDaemon(t, nil,
		"--cri-socket", k8snode.ContainerdSocket, "--docker-socket=",
		"--kubelet-root", k8snode.KubeletRoot, "--node-name", n.Name,
		"--kubeconfig", kubeconfig, "--k8s-events",
		"--journald", "on", "--journald-socket", j.Socket,
		"--record", filepath.Join(dir, "stream.jsonl"), "--state-dir", filepath.Join(dir, "state"))
	m := &mntleak{Daemon: d, journal: j}
	t.Cleanup(func() {
		if t.Failed() {
			for _, f := range m.findings(t) {
				t.Logf("the daemon logged: %s", f.Raw)
			}
		}
	})
	return &lab{n: n, m: m, client: client}
}

// daemonKubeconfig applies testdata/rbac.yaml (removed at cleanup) and
// returns a kubeconfig with a token of its ServiceAccount, valid for an
// hour.
func daemonKubeconfig(t *testing.T, n *k8snode.Node) string {
	t.Helper()
	rbac, err := os.ReadFile(filepath.Join("testdata", "rbac.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	return n.TokenKubeconfig(t, rbac, "kube-system", "mntleak-e2e")
}

// findings are the finding lines the daemon logged so far.
func (m *mntleak) findings(t *testing.T) []logged {
	t.Helper()
	var out []logged
	for _, l := range findinglog.All(m.Logs.All()) {
		if l.Logger != "correlate" || l.Finding == "" {
			continue
		}
		if l.Detail == nil {
			t.Errorf("finding without detail: %s", l.Raw)
			continue
		}
		out = append(out, l)
	}
	return out
}

// Waits for what the daemon does after the kernel's events: a finding
// is enriched off the event path (each runtime question under 2 s), and an
// Event goes out through client-go's broadcaster.
const (
	enrichWait = 10 * time.Second
	eventWait  = 30 * time.Second
)

// isAbout reports whether a finding concerns a test's pods (other
// packages' tests run meanwhile, and the daemon sees the whole machine):
// it names one of their UIDs (a volume's path, a process's cgroup), or one
// of pids as the holder.
func isAbout(f logged, uids []string, pids ...int) bool {
	for _, u := range uids {
		if strings.Contains(f.Raw, u) {
			return true
		}
	}
	return f.HolderPID != 0 && slices.Contains(pids, f.HolderPID)
}

// details are the findings of logged lines, for findingset.Exact.
func details(fs []logged) []*finding.Finding {
	var out []*finding.Finding
	for _, f := range fs {
		out = append(out, f.Detail)
	}
	return out
}

// nsInode is the inode of a namespace link ("mnt:[N]").
func nsInode(t *testing.T, link string) uint32 {
	t.Helper()
	n, err := strconv.ParseUint(strings.TrimSuffix(strings.TrimPrefix(link, "mnt:["), "]"), 10, 32)
	if err != nil {
		t.Fatalf("namespace %q: %v", link, err)
	}
	return uint32(n)
}

// about keeps the findings that concern a test's pods (isAbout).
func about(fs []logged, uids []string, pids ...int) []logged {
	var out []logged
	for _, f := range fs {
		if isAbout(f, uids, pids...) {
			out = append(out, f)
		}
	}
	return out
}

// containerRootfs is where containerd mounts a container's root on the
// node (runc binds the hostPath volumes under it).
func containerRootfs(id string) string {
	return filepath.Join(filepath.Dir(k8snode.ContainerdSocket), "io.containerd.runtime.v2.task", "k8s.io", id, "rootfs")
}

// waitFindings waits up to d for the daemon to have logged want findings
// that match, and returns those it logged (possibly more, or fewer).
func (m *mntleak) waitFindings(t *testing.T, d time.Duration, want int, match func(logged) bool) []logged {
	t.Helper()
	var got []logged
	privtest.Poll(d, func() bool {
		got = got[:0]
		for _, f := range m.findings(t) {
			if match(f) {
				got = append(got, f)
			}
		}
		return len(got) >= want
	})
	oraclecheck.CheckLogged(t, got...)
	return got
}

// allEvents lists the Events in ns (read back from the API server with
// client-go).
func (l *lab) allEvents(t *testing.T, ns string) []eventsv1.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := l.client.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list events in %s: %v", ns, err)
	}
	return list.Items
}

// mntleakEvents lists the Events mntleak posted in ns.
func (l *lab) mntleakEvents(t *testing.T, ns string) []eventsv1.Event {
	t.Helper()
	var out []eventsv1.Event
	for _, e := range l.allEvents(t, ns) {
		if e.ReportingController == kubeevents.Controller {
			out = append(out, e)
		}
	}
	return out
}

// waitEvents waits up to d for want Events of mntleak in ns and returns them.
func (l *lab) waitEvents(t *testing.T, ns string, d time.Duration, want int) []eventsv1.Event {
	t.Helper()
	var got []eventsv1.Event
	privtest.Poll(d, func() bool {
		got = l.mntleakEvents(t, ns)
		return len(got) >= want
	})
	return got
}

// journalWait bounds how long a finding's journal entry may take to show
// once the daemon logged the finding. Nothing is retried: the wait ends at
// the first definite event, the entry there or the daemon's report that
// the journal lost entries; the bound is only for neither happening.
const journalWait = 3 * time.Minute

// journalEntry is the journal's entry for the finding, its fields. It
// waits for a definite event: the entry in the journal (read with
// journalctl), or the daemon's own report that its journal sink lost
// entries (its "journald" logger: "journal unavailable", with the send's
// error), which fails at once with that line. That report named the
// cause of this check's failure under load (a 15 s poll had said only "0
// entries with MNTLEAK_FINDING_ID=358d3db5c04f"; reproduced with
// 0811367de766): "sendmsg: connection refused", the test's journald had
// exited by itself, idle for 30 s while the pods were slow to start
// (journaldtest now keeps it up). How long the entry took is logged.
func (m *mntleak) journalEntry(t *testing.T, f logged) map[string]any {
	t.Helper()
	match := "MNTLEAK_FINDING_ID=" + f.FindingID
	start := time.Now()
	for {
		got := m.journal.Entries(t, 0, match)
		switch {
		case len(got) == 1:
			t.Logf("journal: the entry with %s read back %v after the finding was checked", match, time.Since(start).Round(time.Millisecond))
			return got[0]
		case len(got) > 1:
			t.Fatalf("journal: %d entries with %s, want 1", len(got), match)
		}
		if lost, ok := m.Logs.Find(journalLoss); ok {
			t.Fatalf("journal: no entry with %s: the daemon's journal sink lost entries: %s", match, lost)
		}
		if time.Since(start) > journalWait {
			own := m.journal.Entries(t, 0, "SYSLOG_IDENTIFIER=systemd-journald")
			var said []string
			for _, e := range own {
				said = append(said, fmt.Sprint(e["MESSAGE"]))
			}
			t.Fatalf("journal: no entry with %s after %v, and the daemon reported no loss; journald said: %q",
				match, journalWait, said)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// journalLoss reports whether a line of the daemon's log says its journal
// sink could not send entries (sink/journald's Tee: "journal unavailable").
func journalLoss(line string) bool {
	l, ok := findinglog.Parse(line)
	return ok && l.Logger == "journald" && strings.HasPrefix(l.Msg, "journal unavailable")
}

// checkJournal checks that the journal entry of f carries f's fields.
func (m *mntleak) checkJournal(t *testing.T, f logged) map[string]any {
	t.Helper()
	e := m.journalEntry(t, f)
	want := map[string]string{
		"MESSAGE": f.Headline, "MNTLEAK_SUMMARY": f.Msg, "MNTLEAK_FINDING": f.Finding, "MNTLEAK_CAUSE": f.Cause,
		"MNTLEAK_SYSCALL": f.Syscall, "MNTLEAK_PATH": f.Path, "MNTLEAK_HOLDER_PID": strconv.Itoa(f.HolderPID),
		"MNTLEAK_STUCK_POD": f.StuckPod, "MNTLEAK_STUCK_NAMESPACE": f.StuckNamespace, "MNTLEAK_STUCK_POD_UID": f.StuckPodUID,
		"MNTLEAK_STUCK_VOLUME": f.StuckVolume, "MNTLEAK_STUCK_VOLUME_TYPE": f.StuckVolumeType,
		"MNTLEAK_HOLDER_POD": f.HolderPod, "MNTLEAK_HOLDER_NAMESPACE": f.HolderNamespace,
		"MNTLEAK_HOLDER_CONTAINER": f.HolderContainer, "MNTLEAK_NODE": f.Node,
		"PRIORITY": map[string]string{"error": "3", "warn": "4"}[f.Level],
	}
	for k, v := range want {
		got, ok := e[k]
		if v == "" && !ok {
			continue
		}
		if fmt.Sprint(got) != v {
			t.Errorf("journal %s = %v, want %q", k, got, v)
		}
	}
	return e
}

// checkEvent checks one Event of mntleak as the API server returns it.
func checkEvent(t *testing.T, e eventsv1.Event, node, reason, note string, regarding corev1.ObjectReference, related *corev1.ObjectReference) {
	t.Helper()
	ref := func(r corev1.ObjectReference) string {
		return r.APIVersion + " " + r.Kind + " " + r.Namespace + "/" + r.Name + " " + string(r.UID)
	}
	if e.Type != corev1.EventTypeWarning || e.Reason != reason || e.ReportingController != kubeevents.Controller || e.ReportingInstance != node {
		t.Errorf("Event %s: type %q reason %q reportingController %q reportingInstance %q, want Warning %s %s %s",
			e.Name, e.Type, e.Reason, e.ReportingController, e.ReportingInstance, reason, kubeevents.Controller, node)
	}
	if got, want := ref(e.Regarding), ref(regarding); got != want {
		t.Errorf("Event %s regarding %s, want %s", e.Name, got, want)
	}
	switch {
	case related == nil && e.Related != nil:
		t.Errorf("Event %s related %s, want none", e.Name, ref(*e.Related))
	case related != nil && e.Related == nil:
		t.Errorf("Event %s related nothing, want %s", e.Name, ref(*related))
	case related != nil && ref(*e.Related) != ref(*related):
		t.Errorf("Event %s related %s, want %s", e.Name, ref(*e.Related), ref(*related))
	}
	if e.Note != note {
		t.Errorf("Event %s note:\n%s\nwant the finding's headline and line:\n%s", e.Name, e.Note, note)
	}
}
