package main

import (
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/oracle"
	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestNewestCopyNeedsTheLedger: a copy that is the newest mount its
// holder copied looks, in the tables, exactly like a mount the holder made
// itself (docs/release.md). Without the daemon's ledger release refuses
// it; with it (the holder's creation, with its birth id, and the node's
// unmount recorded) it releases it, citing both. The namespace's own tmpfs
// stays refused with the ledger too.
func TestNewestCopyNeedsTheLedger(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "findmnt")
	bin := privtest.Binary(t)
	dir := t.TempDir()
	stateDir := filepath.Join(dir, "state")
	d := privtest.StartDaemon(t, nil, "--journald", "off", "--state-dir", stateDir)
	r := &releaseRig{node: privtest.StartNode(t), dir: dir, bin: bin}
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	r.node.Run(t, "mount", "-t", "tmpfs", "vol", vol)
	r.node.Run(t, "sh", "-c", "echo data >"+vol+"/file")
	h := r.node.StartHolder(t, "private", "cd /")
	r.node.Run(t, "umount", vol)
	own := r.ownTmpfs(t)
	privtest.WaitLogged(t, stateDir, time.Minute, privtest.Made(h.MntNS), privtest.Unmounted(vol))
	copyArgs := []string{"--mntns", ns(h.MntNS), "--mount-id", strconv.Itoa(copyID(t, h.PID, vol))}
	ownArgs := []string{"--apply", "--mntns", ns(own.MntNS), "--mount-id", strconv.Itoa(copyID(t, own.PID, r.path))}

	out, code := r.release(t, "", "", append([]string{"--apply"}, copyArgs...)...)
	if code != exitError || !strings.Contains(out, "cannot prove mount") {
		t.Fatalf("without the ledger: exit %d, want %d and the proof it lacks:\n%s", code, exitError, out)
	}
	out, code = r.release(t, "", stateDir, ownArgs...)
	if code != exitError || !strings.Contains(out, "cannot prove mount") || r.data(t) != "data\n" {
		t.Fatalf("the namespace's own tmpfs, with the ledger: exit %d, want %d, refused, its data kept:\n%s", code, exitError, out)
	}
	out, code = r.release(t, "", stateDir, append([]string{"--apply"}, copyArgs...)...)
	if code != exitOK || !strings.Contains(out, "the daemon's ledger: unshare[") || !strings.Contains(out, "unmounted "+vol) || !strings.Contains(out, "released: mount") {
		t.Fatalf("with the ledger: exit %d, want %d, the recorded creation and unmount cited, released:\n%s", code, exitOK, out)
	}
	if syscall.Kill(h.PID, 0) != nil {
		t.Error("the holder did not keep running")
	}
	d.Stop(t)
}

// TestActsOnlyOnTheProvenMount: what release proved is what it acts on.
// A leaked copy released, then its mount id reused by a new mount in the
// same namespace: the same command is refused and the new mount keeps its
// data. Two releases of one copy at once: one detaches it, the other is
// refused naming it, and so is every release of the copy afterwards, by
// namespace and mount id or by device.
func TestActsOnlyOnTheProvenMount(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "umount", "findmnt")
	bin := privtest.Binary(t)
	run := func(t *testing.T, r *releaseRig, args ...string) (string, int) {
		return r.release(t, "", "", append([]string{"--apply"}, args...)...)
	}
	t.Run("a mount id reused", func(t *testing.T) {
		// Another process on the machine may take the freed id first:
		// the setup (not the verdict) is tried again, at most 3 times.
		for round := range 3 {
			r := newRig(t, bin)
			h, _ := r.provableLeak(t)
			id := copyID(t, h.PID, filepath.Join(r.dir, "vol"))
			args := []string{"--mntns", ns(h.MntNS), "--mount-id", strconv.Itoa(id)}
			if out, code := run(t, r, args...); code != exitOK || !strings.Contains(out, "released: mount") {
				t.Fatalf("the leak: exit %d:\n%s", code, out)
			}
			// New tmpfs mounts in the holder, with data, until one gets the
			// freed id (the kernel hands out the lowest free one).
			r.pid = h.PID
			r.path = strings.TrimSpace(reuseMountID(t, h.PID, r.dir, id))
			if r.path == "" {
				t.Logf("round %d: mount id %d was taken elsewhere", round, id)
				continue
			}
			out, code := run(t, r, args...)
			if code != exitError || !strings.Contains(out, "refused: ") || r.data(t) != "data\n" {
				t.Fatalf("the reused id: exit %d, want %d, refused, the new mount's data kept:\n%s", code, exitError, out)
			}
			return
		}
		t.Fatal("the freed mount id was never reused in the holder")
	})
	t.Run("a namespace inode reused", func(t *testing.T) {
		r := newRig(t, bin)
		var waiting []*waiter
		for range 40 {
			waiting = append(waiting, startWaiter(t, r.node.PID))
		}
		h, dev := r.provableLeak(t)
		f := r.why(t, dev)
		f["finding"] = "leak" // as the daemon logs one
		line, _ := json.Marshal(f)
		exactly := planned(t, r, "--mntns", ns(h.MntNS), "--mount-id", strconv.Itoa(copyID(t, h.PID, filepath.Join(r.dir, "vol"))))
		_ = h.Cmd.Process.Kill()
		_ = h.Cmd.Wait()
		// A new namespace takes the inode: a healthy one, copied from
		// the node, its own mount ids.
		reused := reuseInode(t, h.MntNS, waiting)
		table := func() string {
			return privtest.Run(t, "nsenter", "-t", strconv.Itoa(reused.pid), "-m", "--", "findmnt", "-n", "-r", "-o", "ID,SOURCE,TARGET")
		}
		before := table()
		out, code := r.release(t, string(line), "", "--apply", "--force", "--finding", "-")
		if code != exitError || !strings.Contains(out, "refused: ") || strings.Contains(out, "released:") {
			t.Fatalf("a finding about the dead namespace's inode: exit %d, want %d and refused:\n%s", code, exitError, out)
		}
		// The plan's identities, without a ledger: the birth id differs.
		out, code = runIn(t, "", append([]string{"-t", strconv.Itoa(r.node.PID), "-m", "--", bin}, append(exactly, "--journald-socket", "", "--state-dir", "", "--force")...)...)
		if code != exitError || !strings.Contains(out, "refused: mnt:["+ns(h.MntNS)+"] was born with id ") || !strings.Contains(out, ": the inode was reused") {
			t.Fatalf("the plan's identities for the dead namespace's inode: exit %d, want %d and refused naming both birth ids:\n%s", code, exitError, out)
		}
		if after := table(); after != before {
			t.Errorf("the new namespace's table changed:\n%s\nbecame\n%s", before, after)
		}
		if syscall.Kill(reused.pid, 0) != nil {
			t.Error("the new namespace's process stopped")
		}
	})
	t.Run("two releases at once", func(t *testing.T) {
		r := newRig(t, bin)
		h, dev := r.provableLeak(t)
		args := []string{"--mntns", ns(h.MntNS), "--mount-id", strconv.Itoa(copyID(t, h.PID, filepath.Join(r.dir, "vol")))}
		var wg sync.WaitGroup
		outs, codes := make([]string, 2), make([]int, 2)
		for i := range 2 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i], codes[i] = run(t, r, args...)
			}()
		}
		wg.Wait()
		if released := judgeRace(t, h.MntNS, outs, codes); released != 1 {
			t.Errorf("%d releases detached the copy, want 1:\n%s\n%s", released, outs[0], outs[1])
		}
		// Later: the copy is gone, and the same command says who took it;
		// by the device, that nothing holds it and the last release of it.
		if out, code := run(t, r, args...); code != exitError || !saysReleasedBefore(out, h.MntNS) {
			t.Errorf("release %v after the copy was released: exit %d, want %d and who released it:\n%s", args, code, exitError, out)
		}
		before := numberTakenElsewhere(t, dev, r.dir)
		out, code := run(t, r, dev)
		if other := before + numberTakenElsewhere(t, dev, r.dir); other != "" {
			// The freed tmpfs's anonymous number went to another
			// filesystem at once (seen: another package's scenario
			// mounting proc): asked by the number, release rightly
			// speaks of that one, so "nothing holds it" is not asserted.
			t.Logf("device %s was taken by another filesystem once the released copy's tmpfs was freed (the kernel: %s); release by the number said:\n%s", dev, other, out)
			return
		}
		if code != exitError || !strings.HasPrefix(out, "nothing holds it: nothing to release\nlast released: mount "+args[3]+" (unique ") ||
			!strings.Contains(out, " is gone from mnt:["+ns(h.MntNS)+"]") {
			t.Errorf("release %s after the copy was released: exit %d, want %d, nothing holds it, and the last release:\n%s", dev, code, exitError, out)
		}
	})
}

// planned is the command a dry run of release with args prints to act on
// exactly the copy it planned (its namespace's birth id and its unique
// id), as arguments of mntleak.
func planned(t *testing.T, r *releaseRig, args ...string) []string {
	t.Helper()
	out, code := r.release(t, "", "", args...)
	const prefix = "to act on exactly this copy: mntleak "
	for _, line := range strings.Split(out, "\n") {
		if cmd, ok := strings.CutPrefix(line, prefix); ok && code == exitOK {
			return strings.Fields(cmd)
		}
	}
	t.Fatalf("the dry run names no identities to act on: exit %d:\n%s", code, out)
	return nil
}

// judgeRace counts the releases of one copy in mnt:[ns] that detached it;
// every other one must not have acted and must say that another release
// took the copy.
func judgeRace(t *testing.T, ns uint32, outs []string, codes []int) int {
	t.Helper()
	released := 0
	for i, out := range outs {
		switch {
		case codes[i] == exitOK && strings.Contains(out, "released: mount "):
			released++
		case codes[i] != exitOK && !strings.Contains(out, "released: ") && saysReleasedBefore(out, ns):
		default:
			t.Errorf("release %d: exit %d, neither released nor refused naming the release that took the copy:\n%s", i, codes[i], out)
		}
	}
	return released
}

// saysReleasedBefore reports whether release's output says the copy in
// mnt:[ns] is gone because another release detached it.
func saysReleasedBefore(out string, ns uint32) bool {
	return strings.Contains(out, "refused: ") && strings.Contains(out, " is gone from mnt:["+strconv.FormatUint(uint64(ns), 10)+"]") &&
		strings.Contains(out, ": released by mntleak[")
}

// reuseMountID mounts tmpfs with data in pid's namespace, one after the
// other, until one gets mount id id: its path, or "" after 100.
func reuseMountID(t *testing.T, pid int, dir string, id int) string {
	t.Helper()
	script := `for i in $(seq 100); do d=` + dir + `/new$i; mkdir -p $d && mount -t tmpfs new $d && echo data >$d/file || exit 2
[ "$(findmnt -n -o ID $d)" = ` + strconv.Itoa(id) + ` ] && { echo $d; exit 0; }; done`
	out, _ := exec.Command("nsenter", "-t", strconv.Itoa(pid), "-m", "--", "sh", "-c", script).Output()
	return string(out)
}

// numberTakenElsewhere is, from the kernel's own tables (the oracle, not
// the code under test), the mounts of device dev outside dir, where no
// mount of it is in dir: dev's number was handed to another filesystem.
// Empty when nothing has dev, or the test's own filesystem still does.
func numberTakenElsewhere(t *testing.T, dev, dir string) string {
	t.Helper()
	var major, minor uint32
	if _, err := fmt.Sscanf(dev, "%d:%d", &major, &minor); err != nil {
		t.Fatalf("device %q: %v", dev, err)
	}
	a, err := oracle.Holders(oracle.Target{Major: major, Minor: minor})
	if err != nil {
		t.Fatalf("the oracle on %s: %v", dev, err)
	}
	var elsewhere []string
	for _, h := range a.Namespaces {
		for _, p := range h.Points {
			if p == dir || strings.HasPrefix(p, dir+"/") {
				return ""
			}
			elsewhere = append(elsewhere, fmt.Sprintf("%s in mnt:[%d]", p, h.Inode))
		}
	}
	return strings.Join(elsewhere, ", ")
}
