package docker

import (
	"flag"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/oraclecheck"

	"github.com/mntleak/mntleak/finding"
)

// want is what one finding logged by the daemon must say.
type want struct {
	kind      finding.FindingKind
	cause     finding.Cause
	syscall   string
	errno     string
	actor     string // comm (prefix) of an event in the evidence: the leaking one
	container bool   // names the container the script reports
	unit      string // a systemd unit the line names
	linked    bool   // links back to the earlier leak finding
	operation string // a teardown through a control file: the operation named (prefix)
}

func TestIncidents(t *testing.T) {
	tests := []struct {
		script string
		extra  []string // other objects of the incident (the netns is under /run)
		want   []want
		// release: what mntleak release does at the script's release
		// point, with the command a finding carries.
		release *releaseWant
	}{
		// On this kernel the unlink detaches the container's copy right after
		// the unmount and nothing pins it: once the teardown has settled
		// there is no leak to report (RHEL 7 fails the unlink instead).
		{"1-netns-rbind.sh", []string{"/run/netns/cni-49ddd103-d374-1f86-7324-13abaeb9c910"}, nil, nil},
		{"2-mountflags-restart.sh", nil, []want{
			{kind: finding.KindFailure, cause: finding.CauseMountflagsRestart, syscall: "umount2", errno: "EINVAL", actor: "dockerd"},
		}, &releaseWant{from: 0, want: "released: mount"}},
		{"3-node-exporter.sh", nil, []want{
			{kind: finding.KindLeak, cause: finding.CauseRprivateBind, syscall: "umount2", actor: "runc:[2:INIT]", container: true},
			{kind: finding.KindFailure, cause: finding.CauseRprivateBind, syscall: "openat", errno: "EBUSY", actor: "runc:[2:INIT]", container: true, linked: true},
			{kind: finding.KindFailure, cause: finding.CauseRprivateBind, syscall: "write", errno: "EBUSY", actor: "runc:[2:INIT]", container: true, linked: true,
				operation: "zram hot_remove"},
		}, &releaseWant{from: 0, want: "released: mount", freed: true}},
		{"4-subpath-configmap.sh", nil, []want{
			{kind: finding.KindFailure, cause: finding.CauseStaleBind, syscall: "mount", errno: "ENOENT", actor: "kubelet"},
		}, &releaseWant{from: 0, code: 1, want: "refused: not a leak (stale-bind)"}},
		{"5-privatetmp.sh", nil, []want{
			{kind: finding.KindLeak, cause: finding.CausePrivateTmp, syscall: "umount2", actor: "ntpd", unit: "ntpd.service"},
			{kind: finding.KindFailure, cause: finding.CausePrivateTmp, syscall: "openat", errno: "EBUSY", unit: "ntpd.service", linked: true},
		}, &releaseWant{from: 0, want: "released: mount", freed: true}},
	}
	for _, tt := range tests {
		name := strings.TrimSuffix(tt.script, ".sh")
		t.Run(name, func(t *testing.T) {
			var hook atRelease
			if tt.release != nil {
				hook = releaseAt(name, *tt.release)
			}
			all, exp := run(t, tt.script, hook)
			got := about(all, name, exp, tt.extra...)
			oraclecheck.CheckLogged(t, got...)
			if len(got) != len(tt.want) {
				for _, f := range all {
					t.Log(f.Msg)
				}
				t.Fatalf("%d findings about the incident, want %d", len(got), len(tt.want))
			}
			for i, w := range tt.want {
				check(t, i, got[i], w, exp)
			}
			if r := tt.release; r != nil && r.freed && exp["after_release"] != "ok" {
				t.Errorf("after mntleak release the operation that failed still fails (after_release=%q)", exp["after_release"])
			}
			if *update && !t.Failed() {
				writeDocs(t, tt.script, got)
			}
		})
	}
}

func check(t *testing.T, i int, l logged, w want, exp map[string]string) {
	t.Helper()
	f := l.Detail
	if f.Kind != w.kind || f.Cause != w.cause || f.Call.Syscall != w.syscall || f.Call.Errno != w.errno || l.Cause != w.cause.String() {
		t.Errorf("finding %d: %s %s %s %s, want %s %s %s %s\n%s", i, f.Kind, f.Cause, f.Call.Syscall, f.Call.Errno,
			w.kind, w.cause, w.syscall, w.errno, l.Msg)
	}
	if l.Level != map[finding.FindingKind]string{finding.KindLeak: "warn", finding.KindFailure: "error"}[f.Kind] {
		t.Errorf("finding %d logged at %s", i, l.Level)
	}
	// The holder: the namespace and process the script saw.
	if ns := exp["holder_ns"]; ns != "" {
		okNS := false
		for _, h := range f.Holders {
			okNS = okNS || strconv.FormatUint(uint64(h.MntNS), 10) == ns
		}
		if !okNS && !(f.Cause == finding.CauseStaleBind && len(f.Holders) > 0 && f.Holders[0].MntNS == f.Call.MntNS) {
			t.Errorf("finding %d names no holder in mnt:[%s]: %s", i, ns, l.Msg)
		}
	}
	if pid := exp["holder_pid"]; pid != "" && f.Cause != finding.CauseStaleBind {
		if _, a := f.Actor(); a == nil || strconv.Itoa(a.PID) != pid {
			t.Errorf("finding %d: actor (holder_pid) %+v, want pid %s: %s", i, a, pid, l.Msg)
		}
		for _, h := range f.Holders {
			for _, p := range h.Processes {
				if strconv.Itoa(p.PID) == pid && (p.Cmdline == "" || p.Exe == "") {
					t.Errorf("finding %d: holder %d without exe/cmdline", i, p.PID)
				}
			}
		}
	}
	// An EBUSY failure record carries argv from the kernel; for other calls
	// (runc's init failing a mount) it is read at arrival, best effort.
	if f.Kind == finding.KindFailure && f.Call.Errno == "EBUSY" && f.Call.Cmdline == "" {
		t.Errorf("finding %d: the failing call's command line was not captured", i)
	}
	if w.actor != "" {
		found := false
		for _, e := range f.Evidence[1:] {
			found = found || (e.Event != nil && strings.HasPrefix(e.Event.Comm, w.actor))
		}
		if !found || !strings.Contains(l.LeakEvent, w.actor) {
			t.Errorf("finding %d: no evidence event by %q (leak_event %q)", i, w.actor, l.LeakEvent)
		}
	}
	if w.container && (exp["container"] == "" || l.Container != exp["container"] || !strings.Contains(l.Msg, "container "+exp["container"][:12])) {
		t.Errorf("finding %d: container %q, want %q: %s", i, l.Container, exp["container"], l.Msg)
	}
	if w.unit != "" && !strings.Contains(l.Msg, w.unit) {
		t.Errorf("finding %d does not name %s: %s", i, w.unit, l.Msg)
	}
	if (f.Leak != nil) != w.linked {
		t.Errorf("finding %d: linked to a leak = %v, want %v", i, f.Leak != nil, w.linked)
	}
	if f.Fix == "" {
		t.Errorf("finding %d has no fix", i)
	}
	if w.operation != "" && (!strings.HasPrefix(f.Object.Operation, w.operation) || f.Object.Path != exp["device"]) {
		t.Errorf("finding %d: operation %q on %s, want %q on %s", i, f.Object.Operation, f.Object.Path, w.operation, exp["device"])
	}
}

// TestControlChurn: the same Docker, 20 containers started and removed:
// no finding of any kind is about them. run reads the findings once the
// daemon has stopped, and a stopping daemon flushes its correlator: a
// leak still held back for its settle window is reported then, and seen
// here.
func TestControlChurn(t *testing.T) {
	all, exp := run(t, "control-churn.sh", nil)
	oraclecheck.CheckLogged(t, about(all, "control-churn", exp)...)
	for _, f := range about(all, "control-churn", exp) {
		t.Errorf("finding in a control (plain churn): %s", f.Msg)
	}
}

var update = flag.Bool("update", false, "rewrite what docs/incidents.md says mntleak prints, from this run")

// writeDocs replaces the "What mntleak prints" block of the script's
// section of docs/incidents.md with the findings of this run.
func writeDocs(t *testing.T, script string, got []logged) {
	t.Helper()
	path := filepath.Join("..", "..", "docs", "incidents.md")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	doc := string(b)
	src, err := os.ReadFile(filepath.Join("scripts", script))
	if err != nil {
		t.Fatal(err)
	}
	at := strings.Index(doc, strings.TrimSpace(string(src)))
	head := "What mntleak prints"
	i := strings.Index(doc[max(at, 0):], head)
	if at < 0 || i < 0 {
		t.Fatalf("docs/incidents.md has no section with %s and %q after it", script, head)
	}
	i += at
	open := strings.Index(doc[i:], "```\n") + i + 4
	end := strings.Index(doc[open:], "```") + open
	lines := []string{"(no finding)"}
	if len(got) > 0 {
		lines = lines[:0]
	}
	for _, l := range got {
		lines = append(lines, l.Short()+"\n")
	}
	doc = doc[:open] + strings.TrimSuffix(strings.Join(lines, "\n"), "\n") + "\n" + doc[end:]
	if err := os.WriteFile(path, []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestIncidentDocs: docs/incidents.md shows every script as it is run,
// and each seed's story (e2e/scenarios/seeds) the scripts tell.
func TestIncidentDocs(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "incidents.md"))
	if err != nil {
		t.Fatal(err)
	}
	scripts, _ := filepath.Glob(filepath.Join("scripts", "*.sh"))
	if len(scripts) < 7 {
		t.Fatalf("only %d scripts", len(scripts))
	}
	seeds, _ := filepath.Glob(filepath.Join("..", "scenarios", "seeds", "*.sh"))
	if len(seeds) != 5 {
		t.Fatalf("%d seeds' stories in ../scenarios/seeds, want 5", len(seeds))
	}
	scripts = append(scripts, seeds...)
	for _, s := range scripts {
		b, err := os.ReadFile(s)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(doc), strings.TrimSpace(string(b))) {
			t.Errorf("docs/incidents.md does not contain %s as it is", s)
		}
	}
}
