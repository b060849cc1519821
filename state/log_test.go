package state

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

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

// TestReadDamage: each kind of damage is skipped with one warning naming
// the file, the good events are kept, and a log opened afterwards appends
// after every name taken.
func TestReadDamage(t *testing.T) {
	for _, tt := range []struct {
		name      string
		damage    func(t *testing.T, dir string, first string)
		warning   string // in the only warning; "" for none
		events    int    // good events left of the 3 written
		otherBoot int
	}{
		{"truncated last line and garbage lines", func(t *testing.T, dir, first string) {
			f, _ := os.OpenFile(first, os.O_APPEND|os.O_WRONLY, 0)
			f.WriteString("not json at all\n{\"kind\":\"mount\",\"pid\":4")
			f.Close()
		}, "2 corrupt or truncated lines skipped, the first at line 5", 3, 0},
		{"garbage segment", func(t *testing.T, dir, first string) {
			os.WriteFile(filepath.Join(dir, "lineage-7.jsonl"), []byte("\x00\x01garbage\n"), 0o600)
		}, "lineage-7.jsonl: no lineage header", 3, 0},
		{"segment truncated to nothing", func(t *testing.T, dir, first string) {
			os.Truncate(first, 0)
		}, "lineage-1.jsonl: no lineage header", 0, 0},
		{"a directory named as a segment", func(t *testing.T, dir, first string) {
			os.MkdirAll(filepath.Join(dir, "lineage-9.jsonl", "x"), 0o700)
		}, "lineage-9.jsonl: not a regular file", 3, 0},
		{"a FIFO named as a segment (would block a read)", func(t *testing.T, dir, first string) {
			if err := unix.Mkfifo(filepath.Join(dir, "lineage-8.jsonl"), 0o600); err != nil {
				t.Fatal(err)
			}
		}, "lineage-8.jsonl: not a regular file", 3, 0},
		{"another boot", func(t *testing.T, dir, first string) {
			l, err := Open(dir, "boot-before", 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			l.Append(ev(7))
			l.Close()
		}, "", 3, 1},
		{"unrelated files", func(t *testing.T, dir, first string) {
			os.WriteFile(filepath.Join(dir, "unrelated.txt"), []byte("x"), 0o600)
			os.WriteFile(filepath.Join(dir, "lineage-x.jsonl"), []byte("x"), 0o600)
		}, "", 3, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			l, err := Open(dir, "boot", 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < 3; i++ {
				l.Append(ev(i))
			}
			l.Close()
			tt.damage(t, dir, filepath.Join(dir, "lineage-1.jsonl"))

			got, err := Read(dir, "boot")
			if err != nil {
				t.Fatal(err)
			}
			if len(got.Events) != tt.events || got.OtherBoot != tt.otherBoot {
				t.Errorf("%d events, %d of another boot; want %d, %d", len(got.Events), got.OtherBoot, tt.events, tt.otherBoot)
			}
			if tt.warning == "" && len(got.Damaged) != 0 || tt.warning != "" && (len(got.Damaged) != 1 || !strings.Contains(got.Damaged[0].String(), tt.warning)) {
				t.Errorf("damage %v, want one with %q", got.Damaged, tt.warning)
			}
			// A restarted daemon appends after the damage and reads its own
			// events back.
			l2, err := Open(dir, "boot", 1<<20)
			if err != nil {
				t.Fatal(err)
			}
			l2.Append(ev(99))
			if err := l2.Close(); err != nil {
				t.Fatal(err)
			}
			again, err := Read(dir, "boot")
			if err != nil || len(again.Events) != tt.events+1 || again.Events[len(again.Events)-1].PID != 99 {
				t.Errorf("after reopening: %v, %+v", err, again)
			}
		})
	}
	if evs, warns, err := Load(filepath.Join(t.TempDir(), "missing"), "boot"); err != nil || len(evs)+len(warns) != 0 {
		t.Errorf("missing dir: %v %v %v", evs, warns, err)
	}
	// A file where the directory should be is an error: the caller decides.
	file := filepath.Join(t.TempDir(), "file")
	os.WriteFile(file, []byte("x"), 0o600)
	if _, err := Read(file, "boot"); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("a file as the directory: %v", err)
	}
	if _, err := Open(file, "boot", 1<<20); err == nil || !strings.Contains(err.Error(), file) {
		t.Errorf("Open of a file as the directory: %v", err)
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
