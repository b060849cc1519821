package main

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/oracle"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// namespaceID is the kernel's 64-bit id of the mount namespace with inode
// ino now (0: none), by the kernel's own walk (the oracle, not the code
// under test).
func namespaceID(t *testing.T, ino uint32) uint64 {
	t.Helper()
	s, err := oracle.Take()
	if err != nil {
		t.Fatalf("the oracle: %v", err)
	}
	if !s.Walked {
		t.Fatalf("the oracle did not walk the namespaces: %v", s.Skipped)
	}
	for _, n := range s.Namespaces {
		if n.Inode == uint64(ino) {
			return n.ID
		}
	}
	return 0
}

// deviceIn is the device (MAJ:MIN) of the mount at path in process pid's
// mount namespace, from the kernel's table.
func deviceIn(t *testing.T, pid int, path string) string {
	t.Helper()
	return strings.TrimSpace(privtest.Run(t, "nsenter", "-t", strconv.Itoa(pid), "-m", "--", "findmnt", "-n", "-o", "MAJ:MIN", "--mountpoint", path))
}

// TestOldStateDirFindingRefused (issue 26's matrix: a finding from an old
// state dir): a daemon keeps a leak finding in its state dir and stops;
// then the world moves on: the holder's namespace dies, or dies and its
// inode is taken by a new healthy namespace, or the copy is released and
// its mount id taken by a new healthy mount in the same namespace.
// `release --finding ID --state-dir OLD --apply --force` is refused,
// naming what differs, and the new namespace or mount is untouched.
func TestOldStateDirFindingRefused(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "findmnt")
	bin := privtest.Binary(t)
	var goneID uint64 // the killed holder's namespace's id
	for _, tc := range []struct {
		name string
		// after changes the world once the daemon stopped; it returns a
		// check that what is there now is as it was before the release.
		after func(t *testing.T, r *releaseRig, h *privtest.Holder, stateDir string) func(t *testing.T)
		want  string
		// bare is what the same finding given as a file without the
		// daemon's ledger is refused with ("": want).
		bare string
		// wantNow, when set, is the refusal the kernel's state (the
		// oracle, not the code under test) calls for at this moment,
		// given the world the test made: other tests on the machine may
		// take a freed number meanwhile, and release must then say so.
		wantNow func(t *testing.T, r *releaseRig, h *privtest.Holder, dev string) (want, why string)
	}{
		{name: "the namespace is gone", want: "no process runs in mnt:[",
			after: func(t *testing.T, r *releaseRig, h *privtest.Holder, _ string) func(t *testing.T) {
				if goneID = namespaceID(t, h.MntNS); goneID == 0 {
					t.Fatalf("the oracle finds no mnt:[%d] before its holder is killed", h.MntNS)
				}
				_ = h.Cmd.Process.Kill()
				_ = h.Cmd.Wait()
				return func(*testing.T) {}
			},
			wantNow: func(t *testing.T, _ *releaseRig, h *privtest.Holder, _ string) (string, string) {
				if id := namespaceID(t, h.MntNS); id != 0 && id != goneID {
					return "the inode was reused", fmt.Sprintf("mnt:[%d] is another namespace's now (another test made it)", h.MntNS)
				}
				return "no process runs in mnt:[", ""
			}},
		{name: "the namespace inode is reused", want: "the inode was reused", bare: "the finding's holder was born with id ",
			after: func(t *testing.T, r *releaseRig, h *privtest.Holder, _ string) func(t *testing.T) {
				var waiting []*waiter
				for range 40 {
					waiting = append(waiting, startWaiter(t, r.node.PID))
				}
				_ = h.Cmd.Process.Kill()
				_ = h.Cmd.Wait()
				reused := reuseInode(t, h.MntNS, waiting)
				table := func() string {
					return privtest.Run(t, "nsenter", "-t", strconv.Itoa(reused.pid), "-m", "--", "findmnt", "-n", "-r", "-o", "ID,SOURCE,TARGET")
				}
				before := table()
				return func(t *testing.T) {
					if after := table(); after != before {
						t.Errorf("the new namespace's table changed:\n%s\nbecame\n%s", before, after)
					}
					if syscall.Kill(reused.pid, 0) != nil {
						t.Error("the new namespace's process stopped")
					}
				}
			}},
		{name: "the mount id is reused", want: "the finding differs from the live state: its object is ",
			after: func(t *testing.T, r *releaseRig, h *privtest.Holder, _ string) func(t *testing.T) {
				vol := filepath.Join(r.dir, "vol")
				id := copyID(t, h.PID, vol)
				out, code := r.release(t, "", "", "--apply", "--mntns", ns(h.MntNS), "--mount-id", strconv.Itoa(id))
				if code != exitOK || !strings.Contains(out, "released: mount") {
					t.Fatalf("the leak: exit %d:\n%s", code, out)
				}
				r.pid, r.path = h.PID, strings.TrimSpace(reuseMountID(t, h.PID, r.dir, id))
				if r.path == "" {
					t.Skipf("mount id %d was taken elsewhere (the setup, not the verdict)", id)
				}
				return func(t *testing.T) {
					if r.data(t) != "data\n" {
						t.Error("the new mount lost its data")
					}
				}
			},
			wantNow: func(t *testing.T, r *releaseRig, h *privtest.Holder, dev string) (string, string) {
				// A tmpfs's anonymous device number is handed out again
				// at once: the new mount may have the released copy's.
				if now := deviceIn(t, h.PID, r.path); now == dev {
					return "the finding differs from the live state: its copy was at ", "the new mount got the released tmpfs's device number " + now + " too"
				}
				return "the finding differs from the live state: its object is ", ""
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stateDir := filepath.Join(t.TempDir(), "state")
			d := privtest.StartDaemon(t, nil, "--journald", "off", "--state-dir", stateDir)
			r := newRig(t, bin)
			h, _ := r.provableLeak(t)
			line := findingLine(t, d, `"finding":"leak"`, filepath.Join(r.dir, "vol"))
			var f struct {
				ID  string `json:"finding_id"`
				Dev string `json:"dev"` // the object's
			}
			if err := json.Unmarshal([]byte(line), &f); err != nil || len(f.ID) != 12 || f.Dev == "" {
				t.Fatalf("finding_id %q (%v): %s", f.ID, err, line)
			}
			privtest.WaitLogged(t, stateDir, time.Minute, privtest.Made(h.MntNS), privtest.Unmounted(filepath.Join(r.dir, "vol")))
			d.Stop(t)
			check := tc.after(t, r, h, stateDir)
			wants := func(want string) []string {
				if tc.wantNow == nil {
					return []string{want}
				}
				now, why := tc.wantNow(t, r, h, f.Dev)
				if why != "" {
					t.Logf("the oracle: %s: want %q", why, now)
				}
				return []string{now}
			}
			refusedWith := func(what string, stdin, stateDir string, want string, args ...string) {
				before := wants(want)
				out, code := r.release(t, stdin, stateDir, args...)
				// What the kernel called for just before or just after
				// the release (the state may change in between).
				accept := append(before, wants(want)...)
				said := false
				for _, w := range accept {
					said = said || strings.Contains(out, w)
				}
				if code != exitError || !strings.Contains(out, "refused: ") || !said || strings.Contains(out, "released:") {
					t.Fatalf("%sexit %d, want %d and refused with one of %q:\n%s", what, code, exitError, accept, out)
				}
			}
			refusedWith("", "", stateDir, tc.want, "--apply", "--force", "--finding", f.ID)
			bare := tc.bare
			if bare == "" {
				bare = tc.want
			}
			refusedWith("without the ledger: ", line+"\n", "", bare, "--apply", "--force", "--finding", "-")
			check(t)
		})
	}
}
