package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/release"
)

// TestFindingOfAReusedNamespaceRefused: release --finding FILE, without the
// daemon's ledger, refuses a finding whose holder was born with another id
// than the live namespace under its inode has now, before anything else
// (with or without a release command in the finding); the same finding
// with the live id is not refused for that.
func TestFindingOfAReusedNamespaceRefused(t *testing.T) {
	self, err := selfNS()
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := release.BirthID(self)
	if err != nil || live == 0 {
		t.Skipf("no birth id for mnt:[%d] here (NS_GET_MNTNS_ID, 6.9+, as root): %v", self, err)
	}
	for _, tc := range []struct {
		name    string
		id      uint64
		command bool // the finding names a release command
		refused bool
	}{
		{"another birth id, with a release command", live + 1, true, true},
		{"another birth id, no release command", live + 1, false, true},
		{"the live birth id (control)", live, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			f := finding.Finding{Kind: finding.KindLeak, Time: now, Cause: finding.CauseUnshare, Summary: "s", Fix: "f",
				Call:    finding.Call{Time: now, PID: 1000, TID: 1000, Comm: "umount", Syscall: "umount2", MntNS: self},
				Object:  finding.Object{Path: "/no/such/vol", Dev: event.MakeDev(7, 200)},
				Holders: []finding.Holder{{MntNS: self, MntNSID: tc.id, Where: "/no/such/vol", MountID: 1 << 30}}}
			if tc.command {
				f.Release = "mntleak release --mntns " + strconv.FormatUint(uint64(self), 10) + " --mount-id " + strconv.Itoa(1<<30)
			}
			b, err := json.Marshal(f)
			if err != nil {
				t.Fatal(err)
			}
			file := filepath.Join(t.TempDir(), "finding.json")
			if err := os.WriteFile(file, b, 0o600); err != nil {
				t.Fatal(err)
			}
			var stdout, stderr bytes.Buffer
			code := runRelease([]string{"--journald-socket", "", "--state-dir", "", "--finding", file}, &stdout, &stderr)
			out := stdout.String() + stderr.String()
			want := "refused: mnt:[" + strconv.FormatUint(uint64(self), 10) + "] was born with id " + strconv.FormatUint(live, 10) +
				" now (read through "
			reused := strings.Contains(out, want) && strings.Contains(out, "the finding's holder was born with id "+strconv.FormatUint(tc.id, 10)+": the inode was reused")
			if tc.refused && (code != exitError || !reused || strings.Count(out, "refused:") != 1) {
				t.Errorf("exit %d, want %d and only %q…:\n%s", code, exitError, want, out)
			}
			if !tc.refused && (reused || strings.Contains(out, "released:")) {
				t.Errorf("exit %d:\n%s", code, out)
			}
		})
	}
}

// TestFindingOfAMovedMountIDRefused: a mount id the kernel handed to a new
// mount elsewhere, on a device number that was handed out again too (an
// anonymous tmpfs one), is refused by the mount point the finding's holder
// names: release --finding compares it with the live mount's.
func TestFindingOfAMovedMountIDRefused(t *testing.T) {
	self, err := selfNS()
	if err != nil {
		t.Fatal(err)
	}
	live, _, err := release.BirthID(self)
	if err != nil || live == 0 {
		t.Skipf("no birth id for mnt:[%d] here (NS_GET_MNTNS_ID, 6.9+, as root): %v", self, err)
	}
	roots, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter("/"))
	if err != nil || len(roots) == 0 {
		t.Fatalf("the root mount: %v", err)
	}
	root := roots[len(roots)-1]
	now := time.Now()
	f := finding.Finding{Kind: finding.KindLeak, Time: now, Cause: finding.CauseUnshare, Summary: "s", Fix: "f",
		Call:    finding.Call{Time: now, PID: 1000, TID: 1000, Comm: "umount", Syscall: "umount2", MntNS: self},
		Object:  finding.Object{Path: "/no/such/vol", Dev: event.MakeDev(uint32(root.Major), uint32(root.Minor))},
		Holders: []finding.Holder{{MntNS: self, MntNSID: live, Where: "/no/such/vol", MountID: root.ID}},
		Release: "mntleak release --mntns " + strconv.FormatUint(uint64(self), 10) + " --mount-id " + strconv.Itoa(root.ID)}
	b, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), "finding.json")
	if err := os.WriteFile(file, b, 0o600); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	code := runRelease([]string{"--journald-socket", "", "--state-dir", "", "--finding", file}, &stdout, &stderr)
	out := stdout.String() + stderr.String()
	want := "refused: the finding differs from the live state: its copy was at /no/such/vol, mount " + strconv.Itoa(root.ID) +
		" in mnt:[" + strconv.FormatUint(uint64(self), 10) + "] is at / now"
	if code != exitError || !strings.Contains(out, want) || strings.Count(out, "refused:") != 1 {
		t.Errorf("exit %d, want %d and only %q:\n%s", code, exitError, want, out)
	}
}
