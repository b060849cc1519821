package main

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

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
	for _, tc := range []struct {
		name string
		// after changes the world once the daemon stopped; it returns a
		// check that what is there now is as it was before the release.
		after func(t *testing.T, r *releaseRig, h *privtest.Holder, stateDir string) func(t *testing.T)
		want  string
		// bare is what the same finding given as a file without the
		// daemon's ledger is refused with ("": want).
		bare string
	}{
		{name: "the namespace is gone", want: "no process runs in mnt:[",
			after: func(t *testing.T, r *releaseRig, h *privtest.Holder, _ string) func(t *testing.T) {
				_ = h.Cmd.Process.Kill()
				_ = h.Cmd.Wait()
				return func(*testing.T) {}
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
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stateDir := filepath.Join(t.TempDir(), "state")
			d := privtest.StartDaemon(t, nil, "--journald", "off", "--state-dir", stateDir)
			r := newRig(t, bin)
			h, _ := r.provableLeak(t)
			line := findingLine(t, d, `"finding":"leak"`, filepath.Join(r.dir, "vol"))
			var f struct {
				ID string `json:"finding_id"`
			}
			if err := json.Unmarshal([]byte(line), &f); err != nil || len(f.ID) != 12 {
				t.Fatalf("finding_id %q (%v): %s", f.ID, err, line)
			}
			time.Sleep(1500 * time.Millisecond) // the state log is flushed every second
			d.Stop(t)
			check := tc.after(t, r, h, stateDir)
			out, code := r.release(t, "", stateDir, "--apply", "--force", "--finding", f.ID)
			if code != exitError || !strings.Contains(out, "refused: ") || !strings.Contains(out, tc.want) || strings.Contains(out, "released:") {
				t.Fatalf("exit %d, want %d and refused with %q:\n%s", code, exitError, tc.want, out)
			}
			bare := tc.bare
			if bare == "" {
				bare = tc.want
			}
			out, code = r.release(t, line+"\n", "", "--apply", "--force", "--finding", "-")
			if code != exitError || !strings.Contains(out, "refused: ") || !strings.Contains(out, bare) || strings.Contains(out, "released:") {
				t.Fatalf("without the ledger: exit %d, want %d and refused with %q:\n%s", code, exitError, bare, out)
			}
			t.Logf("without the ledger: %s", strings.TrimSpace(out))
			check(t)
		})
	}
}
