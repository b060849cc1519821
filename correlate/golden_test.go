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
)

var update = flag.Bool("update", false, "rewrite testdata/scenarios/*/findings.golden from the recorded streams")

// expectation is what one finding of a scenario must say, whatever the
// golden file holds: -update cannot bless a wrong verdict.
type expectation struct {
	kind       correlate.FindingKind
	cause      correlate.Cause
	syscall    string // of the call
	errno      string
	holderComm string // a process named among the holders (processes or pins)
	actor      string // comm of an event in the evidence (the leaking bind, the unshare...)
	linked     bool   // a failure that links back to the leak finding
	detached   bool   // the primary copy must have been detached by the kernel since
	exited     bool   // a holder whose last process had left
}

var scenarios = map[string][]expectation{
	// containerd's unlink right after the unmount detaches the container's
	// copy on this kernel, and nothing pins it: once the teardown has
	// settled there is no leak (RHEL 7 fails the unlink with EBUSY instead).
	"seed000-netns-rbind": nil,
	"seed001-mountflags-restart": {
		{kind: correlate.KindFailure, cause: correlate.CauseMountflagsRestart, syscall: "umount2", errno: "EINVAL", holderComm: "containerd-shim", actor: "dockerd"},
	},
	"seed002-node-exporter": {
		{kind: correlate.KindLeak, cause: correlate.CauseRprivateBind, syscall: "umount2", holderComm: "node_exporter", actor: "runc"},
		{kind: correlate.KindFailure, cause: correlate.CauseRprivateBind, syscall: "openat", errno: "EBUSY", holderComm: "node_exporter", actor: "runc", linked: true},
	},
	"seed002-zram-teardown": {
		{kind: correlate.KindLeak, cause: correlate.CauseRprivateBind, syscall: "umount2", holderComm: "node_exporter", actor: "runc"},
		{kind: correlate.KindFailure, cause: correlate.CauseRprivateBind, syscall: "write", errno: "EBUSY", holderComm: "node_exporter", actor: "runc", linked: true},
	},
	"seed003-subpath-configmap": {
		{kind: correlate.KindFailure, cause: correlate.CauseStaleBind, syscall: "mount", errno: "ENOENT", actor: "kubelet"},
	},
	"seed004-privatetmp": {
		// The overlay's copy goes with the rmdir of merged (this kernel
		// detaches it); the volume's stays: its device is busy.
		{kind: correlate.KindLeak, cause: correlate.CausePrivateTmp, syscall: "umount2", holderComm: "ntpd", actor: "ntpd"},
		{kind: correlate.KindFailure, cause: correlate.CausePrivateTmp, syscall: "openat", errno: "EBUSY", holderComm: "ntpd", linked: true},
	},
	"private-parent": {
		{kind: correlate.KindLeak, cause: correlate.CausePrivateParent, syscall: "umount2", holderComm: "sshd", actor: "dockerd"},
	},
	"shared-propagation": {
		{kind: correlate.KindFailure, cause: correlate.CauseSharedPropagation, syscall: "rmdir", errno: "EBUSY", actor: "csi-driver"},
	},
	"busy-copy": {
		{kind: correlate.KindFailure, cause: correlate.CauseBusyCopy, syscall: "umount2", errno: "EBUSY", holderComm: "worker"},
	},
	"in-use": {
		{kind: correlate.KindFailure, cause: correlate.CauseInUse, syscall: "umount2", errno: "EBUSY", holderComm: "app"},
	},
	"pid-reuse": {
		{kind: correlate.KindLeak, cause: correlate.CauseUnshare, syscall: "umount2", holderComm: "keeper"},
		{kind: correlate.KindFailure, cause: correlate.CauseUnshare, syscall: "openat", errno: "EBUSY", holderComm: "keeper", linked: true},
	},
	"holder-exited": {
		// The leak is confirmed by the failure, when its holder has exited:
		// the copy stayed, detached with its namespace, and the reader
		// keeps it busy through the file it opened in it: the leak names
		// the reader, as the failure does.
		{kind: correlate.KindLeak, cause: correlate.CauseUnshare, syscall: "umount2", holderComm: "reader", exited: true},
		{kind: correlate.KindFailure, cause: correlate.CauseUnshare, syscall: "openat", errno: "EBUSY", holderComm: "reader", exited: true, linked: true},
	},
	// No process in the namespace: a process holds it open by an fd.
	"nsfd-kept": {
		{kind: correlate.KindFailure, cause: correlate.CauseUnshare, syscall: "openat", errno: "EBUSY", holderComm: "pinner"},
	},
	// No process in the namespace: a bind of its nsfs file keeps it, and
	// a look inside between the two failures changes neither verdict.
	"bind-kept-entered": {
		{kind: correlate.KindFailure, cause: correlate.CauseUnshare, syscall: "openat", errno: "EBUSY", actor: "true"}, // unshare --mount=FILE true: named as it exited
		{kind: correlate.KindFailure, cause: correlate.CauseUnshare, syscall: "openat", errno: "EBUSY", actor: "true"}, // unshare --mount=FILE true: named as it exited
	},
	// The leak names the worker forked into the copy, whose cwd pins it.
	"forked-pinner": {
		{kind: correlate.KindLeak, cause: correlate.CauseUnshare, syscall: "umount2", holderComm: "worker"},
	},
	// Negatives: twenty containers started and removed, no finding at all.
	"day-in-the-life": nil,
}

func TestGolden(t *testing.T) {
	dirs, _ := filepath.Glob("../testdata/scenarios/*/stream.jsonl")
	if len(dirs) != len(scenarios) {
		t.Errorf("%d recorded streams, %d scenarios with expectations", len(dirs), len(scenarios))
	}
	for name, want := range scenarios {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("../testdata/scenarios", name)
			f, err := os.Open(filepath.Join(dir, "stream.jsonl"))
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			var got []*correlate.Finding
			if err := correlate.Replay(f, name, func(fd *correlate.Finding) { got = append(got, fd) }); err != nil {
				t.Fatal(err)
			}
			checkExpectations(t, got, want, true)

			var buf bytes.Buffer
			enc := json.NewEncoder(&buf)
			enc.SetEscapeHTML(false)
			for _, fd := range got {
				if err := enc.Encode(fd); err != nil {
					t.Fatal(err)
				}
				buf.WriteString(fd.Line() + "\n\n")
			}
			golden := filepath.Join(dir, "findings.golden")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			old, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./correlate -run TestGolden -update)", err)
			}
			if !bytes.Equal(old, buf.Bytes()) {
				t.Errorf("findings differ from %s (go test ./correlate -run TestGolden -update to accept):\n%s", golden, buf.String())
			}
		})
	}
}

// checkExpectations compares findings with a scenario's expectations.
// replay is false for a live run, where whether the kernel detached a copy
// before the correlator read it depends on timing: both are right.
func checkExpectations(t *testing.T, got []*correlate.Finding, want []expectation, replay bool) {
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
		if w.holderComm != "" && !holderNamed(f, w.holderComm) {
			t.Errorf("finding %d names no holder %q: %s", i, w.holderComm, f.Line())
		}
		if w.actor != "" && !actorNamed(f, w.actor) {
			t.Errorf("finding %d has no evidence event by %q: %+v", i, w.actor, f.Evidence)
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

func holderNamed(f *correlate.Finding, comm string) bool {
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

func actorNamed(f *correlate.Finding, comm string) bool {
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
	streams, _ := filepath.Glob("../testdata/scenarios/*/stream.jsonl")
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
				if err := correlate.Replay(bytes.NewReader(data), path, func(f *correlate.Finding) {
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
