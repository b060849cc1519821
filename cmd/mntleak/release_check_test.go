package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
	"github.com/mntleak/mntleak/release"
	"github.com/mntleak/mntleak/state"
)

// keptBusyCopy takes the failed unmount as evidence only from a busy-copy
// finding the daemon kept this boot about the same object and the same
// copy (namespace, mount id, mount point).
func TestKeptBusyCopyEvidence(t *testing.T) {
	dev := event.MakeDev(7, 0)
	copyOf := finding.Holder{MntNS: 4026532186, MountID: 84, Where: "/vol"}
	kept := func(edit func(*finding.Finding)) *finding.Finding {
		f := &finding.Finding{Kind: finding.KindFailure, Cause: finding.CauseBusyCopy, Time: time.Now(),
			Call:    finding.Call{Time: time.Now(), PID: 31838, Comm: "umount", Syscall: "umount2", Errno: "EBUSY"},
			Object:  finding.Object{Path: "/vol", Dev: dev},
			Holders: []finding.Holder{copyOf}}
		edit(f)
		return f
	}
	for _, tc := range []struct {
		name string
		kept *finding.Finding
		want bool
	}{
		{"the same copy", kept(func(*finding.Finding) {}), true},
		{"another device", kept(func(f *finding.Finding) { f.Object.Dev = event.MakeDev(7, 1) }), false},
		{"another mount id", kept(func(f *finding.Finding) { f.Holders[0].MountID = 85 }), false},
		{"another namespace", kept(func(f *finding.Finding) { f.Holders[0].MntNS = 4026532187 }), false},
		{"another mount point", kept(func(f *finding.Finding) { f.Holders[0].Where = "/other" }), false},
		{"no failed call", kept(func(f *finding.Finding) { f.Call.Errno = "" }), false},
		{"a previous boot", kept(func(f *finding.Finding) { f.Time = time.Now().Add(-24 * 365 * time.Hour) }), false},
		{"another cause", kept(func(f *finding.Finding) { f.Cause = finding.CauseRprivateBind }), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			b, err := json.Marshal(tc.kept)
			if err != nil {
				t.Fatal(err)
			}
			if err := state.AppendFinding(dir, "8ecd277e1e51", b); err != nil {
				t.Fatal(err)
			}
			live := &finding.Finding{Kind: finding.KindLeak, Cause: finding.CauseBusyCopy, Object: finding.Object{Path: "/vol", Dev: dev},
				Holders: []finding.Holder{copyOf}}
			var c release.Checker
			if err := keptBusyCopy(live, dir, &c); err != nil {
				t.Fatal(err)
			}
			if got := c.FailedUnmount != ""; got != tc.want {
				t.Fatalf("evidence %q, want some: %v", c.FailedUnmount, tc.want)
			}
			if tc.want && !strings.HasPrefix(c.FailedUnmount, "umount2 by umount[31838] at ") || tc.want && !strings.HasSuffix(c.FailedUnmount, ": EBUSY, kept by the daemon as finding 8ecd277e1e51") {
				t.Errorf("evidence %q", c.FailedUnmount)
			}
		})
	}
}
