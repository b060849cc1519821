package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
)

func ev(i int) *event.Event {
	return &event.Event{Kind: event.KindMount, Time: time.Unix(int64(i), 0).UTC(), PID: uint32(i), Comm: "runc",
		SyscallNr: 165, Syscall: "mount", Source: "/", Target: "/run/c/rootfs/" + strings.Repeat("x", 100)}
}

func TestAppendLoadRotate(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	l, err := Open(dir, "boot-a", 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	const n = 500 // ~150 KiB of events against a 16 KiB cap
	for i := 0; i < n; i++ {
		if err := l.Append(ev(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := l.Close(); err != nil || l.Close() != nil {
		t.Fatal("close", err)
	}
	segs, _ := segments(dir)
	var total int64
	for _, s := range segs {
		total += s.size
		if info, _ := os.Stat(s.path); info.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %v, want 0600", s.path, info.Mode().Perm())
		}
	}
	if total > 16<<10+(16<<10)/4 || len(segs) < 2 {
		t.Errorf("%d segments, %d bytes: want rotation under the 16 KiB cap", len(segs), total)
	}
	if info, _ := os.Stat(dir); info.Mode().Perm() != 0o700 {
		t.Errorf("state dir mode %v, want 0700", info.Mode().Perm())
	}
	got, warnings, err := Load(dir, "boot-a")
	if err != nil || len(warnings) != 0 {
		t.Fatal(err, warnings)
	}
	// The newest events are kept, in order.
	if len(got) == 0 || len(got) >= n || got[len(got)-1].PID != n-1 {
		t.Fatalf("loaded %d events, last %+v", len(got), got[len(got)-1])
	}
	for i := 1; i < len(got); i++ {
		if got[i].PID != got[i-1].PID+1 {
			t.Fatalf("events out of order at %d", i)
		}
	}
	// Another boot's segments mean nothing now.
	if other, _, _ := Load(dir, "boot-b"); len(other) != 0 {
		t.Errorf("%d events loaded for another boot", len(other))
	}
}

func TestLoadSkipsDamage(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, "boot", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		l.Append(ev(i))
	}
	l.Close()
	segs, _ := segments(dir)
	// A crash mid-write leaves a truncated last line; garbage elsewhere.
	f, _ := os.OpenFile(segs[0].path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("{\"kind\":\"mount\",\"pid\":4\nnot json at all\n")
	f.Close()
	os.WriteFile(filepath.Join(dir, "lineage-7.jsonl"), []byte("\x00\x01garbage\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "unrelated.txt"), []byte("x"), 0o600)

	got, warnings, err := Load(dir, "boot")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || len(warnings) != 3 {
		t.Errorf("%d events, warnings %q: want the 3 good events and 3 warnings", len(got), warnings)
	}
	// Opening again starts a new segment after the damaged ones.
	l2, err := Open(dir, "boot", 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	l2.Append(ev(9))
	l2.Close()
	got, _, _ = Load(dir, "boot")
	if len(got) != 4 || got[3].PID != 9 {
		t.Errorf("after reopening: %d events", len(got))
	}
	if evs, warns, err := Load(filepath.Join(dir, "missing"), "boot"); err != nil || len(evs)+len(warns) != 0 {
		t.Errorf("missing dir: %v %v %v", evs, warns, err)
	}
}

func TestKeep(t *testing.T) {
	for _, c := range []struct {
		ev   event.Event
		keep bool
	}{
		{event.Event{Kind: event.KindUnshare}, true},
		{event.Event{Kind: event.KindMount, Ret: -2}, false},
		{event.Event{Kind: event.KindExit}, false},
		{event.Event{Kind: event.KindFailure, Ret: -16}, false},
		{event.Event{Kind: event.KindOpenTree, Ret: 5}, true},
	} {
		if Keep(&c.ev) != c.keep {
			t.Errorf("Keep(%s ret %d) = %v", c.ev.Kind, c.ev.Ret, !c.keep)
		}
	}
}
