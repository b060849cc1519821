package correlate_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/correlate"
	"github.com/mntleak/mntleak/finding"
)

var update = flag.Bool("update", false, "rewrite e2e/scenarios/*/findings.golden from the recorded streams")

// expectation is what one finding of a scenario must say, whatever the
// golden file holds: -update cannot bless a wrong verdict (writeGolden
// refuses to write what fails them). Processes are named by the command
// they ran as; their pid and namespace are the run's recorded facts
// (facts: the recording's events and process lists, or a live run's).
type expectation struct {
	kind     finding.FindingKind
	cause    finding.Cause
	syscall  string // of the call
	errno    string
	actor    string // the process named to act on (holder_pid), by comm; "": none
	role     string // and how it holds (finding.RolePinner, ...)
	holder   string // a process recorded in the primary holder namespace, by comm ("": none, with kept)
	kept     bool   // the primary holder namespace is kept by a bind (or an open file) of its nsfs file
	madeBy   string // comm of the cited event that made that namespace; "inferred"; "": the caller's own namespace
	fix      []string
	evidence string // comm of an event in the evidence (the leaking bind, the restart...)
	linked   bool   // a failure that links back to the leak finding
	detached bool   // the primary copy must have been detached by the kernel since
	exited   bool   // a holder whose last process had left
}

const (
	pinner = finding.RolePinner
	member = finding.RoleMember
)

var scenarios = map[string][]expectation{
	// containerd's unlink right after the unmount detaches the container's
	// copy on this kernel, and nothing pins it: once the teardown has
	// settled there is no leak (RHEL 7 fails the unlink with EBUSY instead).
	"seed000-netns-rbind": nil,
	"seed001-mountflags-restart": {
		{kind: finding.KindFailure, cause: finding.CauseMountflagsRestart, syscall: "umount2", errno: "EINVAL",
			actor: "containerd-shim", role: member, holder: "containerd-shim", madeBy: "dockerd", fix: []string{"containerd-shim"}, evidence: "dockerd"},
	},
	"seed002-node-exporter": {
		{kind: finding.KindLeak, cause: finding.CauseRprivateBind, syscall: "umount2",
			actor: "node_exporter", role: member, holder: "node_exporter", madeBy: "node_exporter", evidence: "runc"},
		{kind: finding.KindFailure, cause: finding.CauseRprivateBind, syscall: "openat", errno: "EBUSY",
			actor: "node_exporter", role: member, holder: "node_exporter", madeBy: "node_exporter", evidence: "runc", linked: true},
	},
	"seed002-zram-teardown": {
		{kind: finding.KindLeak, cause: finding.CauseRprivateBind, syscall: "umount2",
			actor: "node_exporter", role: member, holder: "node_exporter", madeBy: "node_exporter", evidence: "runc"},
		{kind: finding.KindFailure, cause: finding.CauseRprivateBind, syscall: "write", errno: "EBUSY",
			actor: "node_exporter", role: member, holder: "node_exporter", madeBy: "node_exporter", evidence: "runc", linked: true},
	},
	"seed003-subpath-configmap": {
		{kind: finding.KindFailure, cause: finding.CauseStaleBind, syscall: "mount", errno: "ENOENT", holder: "runc", evidence: "kubelet"},
	},
	"seed004-privatetmp": {
		// The overlay's copy goes with the rmdir of merged (this kernel
		// detaches it); the volume's stays: its device is busy. The fix
		// restarts the unit: it names no pid.
		{kind: finding.KindLeak, cause: finding.CausePrivateTmp, syscall: "umount2",
			actor: "ntpd", role: member, holder: "ntpd", madeBy: "ntpd", evidence: "ntpd"},
		{kind: finding.KindFailure, cause: finding.CausePrivateTmp, syscall: "openat", errno: "EBUSY",
			actor: "ntpd", role: member, holder: "ntpd", madeBy: "ntpd", linked: true},
	},
	"private-parent": {
		{kind: finding.KindLeak, cause: finding.CausePrivateParent, syscall: "umount2",
			actor: "sshd", role: member, holder: "sshd", madeBy: "sshd", evidence: "dockerd"},
	},
	"shared-propagation": {
		{kind: finding.KindFailure, cause: finding.CauseSharedPropagation, syscall: "rmdir", errno: "EBUSY",
			actor: "app", role: member, holder: "app", madeBy: "app", fix: []string{"app"}, evidence: "csi-driver"},
	},
	"busy-copy": {
		{kind: finding.KindFailure, cause: finding.CauseBusyCopy, syscall: "umount2", errno: "EBUSY",
			actor: "worker", role: pinner, holder: "worker", madeBy: "worker", fix: []string{"worker"}},
	},
	// A FUSE server SIGKILLed without unmounting: the rmdir of its
	// mountpoint fails on the dead mount; the server (gcsfuse) is cited
	// by its mount and its exit.
	"fuse-daemon-killed": {
		{kind: finding.KindFailure, cause: finding.CauseDeadFuseDaemon, syscall: "rmdir", errno: "EBUSY", holder: "gcsfuse", evidence: "gcsfuse"},
	},
	// A CSI node plugin mounted the volume at the staging path and bound
	// it to a path of its own; the kubelet's unmount of the staging path
	// left the bind: mkfs.ext4's exclusive open fails on it.
	"csi-double-mount": {
		{kind: finding.KindFailure, cause: finding.CauseDoubleMount, syscall: "openat", errno: "EBUSY", holder: "csi-node", evidence: "csi-node"},
	},
	"in-use": {
		{kind: finding.KindFailure, cause: finding.CauseInUse, syscall: "umount2", errno: "EBUSY",
			actor: "app", role: pinner, holder: "app"},
	},
	"pid-reuse": {
		{kind: finding.KindLeak, cause: finding.CauseUnshare, syscall: "umount2",
			actor: "keeper", role: member, holder: "keeper", madeBy: "keeper", fix: []string{"keeper"}},
		{kind: finding.KindFailure, cause: finding.CauseUnshare, syscall: "openat", errno: "EBUSY",
			actor: "keeper", role: member, holder: "keeper", madeBy: "keeper", fix: []string{"keeper"}, linked: true},
	},
	"holder-exited": {
		// The leak is confirmed by the failure, when its holder has exited:
		// the copy stayed, detached with its namespace, and the reader
		// keeps it busy through the file it opened in it (its fd, opened
		// through /proc/PID/root, is in the node's namespace): the leak
		// names the reader, as the failure does.
		{kind: finding.KindLeak, cause: finding.CauseUnshare, syscall: "umount2",
			actor: "reader", role: pinner, holder: "holder", madeBy: "holder", fix: []string{"reader"}, exited: true},
		{kind: finding.KindFailure, cause: finding.CauseUnshare, syscall: "openat", errno: "EBUSY",
			actor: "reader", role: pinner, holder: "holder", madeBy: "holder", fix: []string{"reader"}, exited: true, linked: true},
	},
	// No process in the namespace: a process holds it open by an fd.
	"nsfd-kept": {
		{kind: finding.KindFailure, cause: finding.CauseUnshare, syscall: "openat", errno: "EBUSY",
			actor: "pinner", role: pinner, holder: "keeper", madeBy: "keeper", fix: []string{"pinner"}},
	},
	// No process in the namespace: a bind of its nsfs file keeps it, and
	// a look inside between the two failures changes neither verdict.
	// unshare --mount=FILE true made it: named as it exited.
	"bind-kept-entered": {
		{kind: finding.KindFailure, cause: finding.CauseUnshare, syscall: "openat", errno: "EBUSY", holder: "true", madeBy: "true", evidence: "true"},
		{kind: finding.KindFailure, cause: finding.CauseUnshare, syscall: "openat", errno: "EBUSY", holder: "true", madeBy: "true", evidence: "true"},
	},
	// The leak names the worker forked into the copy, whose cwd pins it;
	// the fix stops the namespace's first process (and the others).
	"forked-pinner": {
		{kind: finding.KindLeak, cause: finding.CauseUnshare, syscall: "umount2",
			actor: "worker", role: pinner, holder: "keeper", madeBy: "keeper", fix: []string{"keeper"}},
	},
	// A failure mntleak rightly calls unknown: a namespace made before
	// tracing began, no process in it, kept by a bind of its nsfs file:
	// nothing says who made it. The bind is named, no process is.
	"bind-kept-before-tracing": {
		{kind: finding.KindFailure, cause: finding.CauseUnknown, syscall: "openat", errno: "EBUSY", kept: true, madeBy: "inferred"},
	},
	// A log agent on the node keeps a file of a stopped container's
	// rootfs open: the shim's unmount of the rootfs fails (issue 28, item
	// 5). Not a leak: the agent and its fd, and the shim's mount.
	"rootfs-held": {
		{kind: finding.KindFailure, cause: finding.CauseRootfsHeld, syscall: "umount2", errno: "EBUSY",
			actor: "log-agent", role: pinner, holder: "log-agent", fix: []string{"log-agent"}, evidence: "containerd-shim"},
	},
	// Negatives: twenty containers started and removed, no finding at all.
	"day-in-the-life": nil,
}

func TestGolden(t *testing.T) {
	dirs, _ := filepath.Glob("../e2e/scenarios/*/stream.jsonl")
	if len(dirs) != len(scenarios) {
		t.Errorf("%d recorded streams, %d scenarios with expectations", len(dirs), len(scenarios))
	}
	for name, want := range scenarios {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("../e2e/scenarios", name)
			f, err := os.Open(filepath.Join(dir, "stream.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var got []*finding.Finding
			if err := correlate.Replay(f, name, func(fd *finding.Finding) { got = append(got, fd) }); err != nil {
				t.Fatal(err)
			}
			x := recordedFacts(t, filepath.Join(dir, "stream.jsonl"))
			checkExpectations(t, got, want, x, true)
			golden := filepath.Join(dir, "findings.golden")
			if *update {
				writeGolden(t, golden, got)
				return
			}
			old, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./correlate -run TestGolden -update)", err)
			}
			if b := goldenBytes(t, got); !bytes.Equal(old, b) {
				t.Errorf("findings differ from %s (go test ./correlate -run TestGolden -update to accept):\n%s", golden, b)
			}
		})
	}
}

// goldenBytes is a golden file's content: each finding as JSON, then its
// line.
func goldenBytes(t testing.TB, got []*finding.Finding) []byte {
	t.Helper()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, fd := range got {
		if err := enc.Encode(fd); err != nil {
			t.Fatal(err)
		}
		buf.WriteString(fd.Line() + "\n\n")
	}
	return buf.Bytes()
}

// writeGolden writes the findings to golden (-update) only when the
// scenario's expectations passed: a golden is checked, then written. A
// test that already failed writes nothing and says so.
func writeGolden(t testing.TB, golden string, got []*finding.Finding) {
	t.Helper()
	if t.Failed() {
		t.Errorf("not writing %s: the findings fail the scenario's expectations", golden)
		return
	}
	if err := os.WriteFile(golden, goldenBytes(t, got), 0o644); err != nil {
		t.Fatal(err)
	}
}

// checkExpectations compares findings with a scenario's expectations: all
// of them, in order, each whole, and nothing more.
// replay is false for a live run, where whether the kernel detached a copy
// before the correlator read it depends on timing: both are right.
func checkExpectations(t testing.TB, got []*finding.Finding, want []expectation, x *facts, replay bool) {
	t.Helper()
	if len(got) != len(want) {
		for _, f := range got {
			t.Log(f.Line())
		}
		t.Fatalf("%d findings, want %d", len(got), len(want))
	}
	for i, w := range want {
		f := got[i]
		if f.Kind != w.kind || f.Cause != w.cause || f.Call.Syscall != w.syscall || f.Call.Errno != w.errno {
			t.Errorf("finding %d: %s %s %s %s, want %s %s %s %s\n%s", i, f.Kind, f.Cause, f.Call.Syscall, f.Call.Errno,
				w.kind, w.cause, w.syscall, w.errno, f.Line())
		}
		checkHolder(t, i, f, w, x)
		if w.evidence != "" && !actorNamed(f, w.evidence) {
			t.Errorf("finding %d has no evidence event by %q: %+v", i, w.evidence, f.Evidence)
		}
		if (f.Leak != nil) != w.linked {
			t.Errorf("finding %d: linked to a leak = %v, want %v", i, f.Leak != nil, w.linked)
		}
		if replay && w.detached && len(f.Holders) > 0 && !f.Holders[0].Detached {
			t.Errorf("finding %d: detached = %v, want %v", i, f.Holders[0].Detached, w.detached)
		}
		exited := false
		for _, h := range f.Holders {
			exited = exited || !h.Exited.IsZero()
		}
		if exited != w.exited {
			t.Errorf("finding %d: an exited holder = %v, want %v", i, exited, w.exited)
		}
		if f.Fix == "" || f.Summary == "" {
			t.Errorf("finding %d without summary or fix: %s", i, f.Line())
		}
		if strings.Contains(f.Line(), "unrelated") {
			t.Errorf("finding %d names the process that reused a holder's pid: %s", i, f.Line())
		}
	}
}

func holderNamed(f *finding.Finding, comm string) bool {
	for _, h := range f.Holders {
		for _, p := range h.Processes {
			if p.Comm == comm {
				return true
			}
		}
		for _, p := range h.Pins {
			if p.Comm == comm {
				return true
			}
		}
	}
	return false
}

func actorNamed(f *finding.Finding, comm string) bool {
	for _, e := range f.Evidence[1:] {
		if e.Event != nil && e.Event.Comm == comm {
			return true
		}
	}
	return false
}

// TestReplayIsStable: the same recording replays to the same bytes, every
// time: every golden stream 50 times, findings as JSON and as lines (a map
// walked in its own order once put a namespace's past members in a
// different order from one replay to the next).
func TestReplayIsStable(t *testing.T) {
	streams, _ := filepath.Glob("../e2e/scenarios/*/stream.jsonl")
	if len(streams) == 0 {
		t.Fatal("no recorded streams")
	}
	for _, path := range streams {
		t.Run(filepath.Base(filepath.Dir(path)), func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			var first []byte
			for i := 0; i < 50; i++ {
				var buf bytes.Buffer
				if err := correlate.Replay(bytes.NewReader(data), path, func(f *finding.Finding) {
					b, _ := json.Marshal(f)
					buf.Write(b)
					buf.WriteString("\n" + f.Line() + "\n" + f.Report())
				}); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					first = buf.Bytes()
					continue
				}
				if !bytes.Equal(buf.Bytes(), first) {
					t.Fatalf("replay %d differs from the first:\n%s\n--- first:\n%s", i, buf.Bytes(), first)
				}
			}
		})
	}
}
