package main

import (
	"crypto/rand"
	"encoding/hex"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestWhyNamesTheHoldersContainers: the process list `mntleak why` reads
// leaves every process's cgroup out (a fifth of its time on a node of
// 2,000 processes); the cgroups of the processes its finding names are
// read then. Two processes in one private namespace, each in a cgroup
// named like a container's, hold a tmpfs there: the finding names each
// process with its own container, exactly.
func TestWhyNamesTheHoldersContainers(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "sleep")
	bin := privtest.Binary(t)
	parent := privtest.Cgroup(t)
	dir := privtest.Mkdir(t, filepath.Join(t.TempDir(), "vol"))
	h, second, ids := twoContainersHolding(t, parent, "mount -t tmpfs -o size=1m tmpfs "+dir)

	code, f := whyOf(t, bin, dir)
	if code != exitError || f == nil || len(f.Holders) != 1 || f.Holders[0].MntNS != h.MntNS {
		t.Fatalf("why %s: exit %d, finding %+v; want exit %d and one holder, mnt:[%d]", dir, code, f, exitError, h.MntNS)
	}
	type named struct {
		PID       int
		Comm      string
		Container string
	}
	var got []named
	for _, p := range f.Holders[0].Processes {
		got = append(got, named{p.PID, p.Comm, p.Container})
	}
	want := []named{{h.PID, "sleep", ids[0]}, {second, "sleep", ids[1]}}
	slices.SortFunc(got, func(a, b named) int { return a.PID - b.PID })
	slices.SortFunc(want, func(a, b named) int { return a.PID - b.PID })
	if !slices.Equal(got, want) || len(f.Holders[0].Pins) != 0 {
		t.Errorf("holder's processes %+v, pins %+v; want %+v and no pin", got, f.Holders[0].Pins, want)
	}
}

// twoContainersHolding starts a holder in a private namespace that runs
// setup there, and a second process in that namespace, and puts each in a
// cgroup under parent named like a container's (a bare id; a docker scope):
// the holder, the second process's pid and the two container ids.
func twoContainersHolding(t *testing.T, parent, setup string) (*privtest.Holder, int, []string) {
	t.Helper()
	ids := []string{containerID(t), containerID(t)}
	cgroups := []string{privtest.ChildCgroup(t, parent, ids[0]), privtest.ChildCgroup(t, parent, "docker-"+ids[1]+".scope")}
	h := privtest.StartHolder(t, "private", setup)
	second := exec.Command("nsenter", "-t", strconv.Itoa(h.PID), "-m", "sleep", "600")
	if err := second.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = second.Process.Kill(); _ = second.Wait() })
	privtest.WaitFor(t, 5*time.Second, "the second process in the holder's namespace", func() bool {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(second.Process.Pid) + "/comm")
		return string(comm) == "sleep\n" && privtest.MountNS(t, strconv.Itoa(second.Process.Pid)) == h.MntNS
	})
	privtest.MoveToCgroup(t, cgroups[0], h.PID)
	privtest.MoveToCgroup(t, cgroups[1], second.Process.Pid)
	return h, second.Process.Pid, ids
}

// containerID is a random container id: 64 hex digits.
func containerID(t *testing.T) string {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// TestContainersNamedByAudit: audit names the processes of a
// namespace that holds a leak with their containers, and the host's
// processes in an item of the host namespace with their units, though its
// process list, like why's, may leave the cgroups out. A private
// namespace of two processes, each in a cgroup named like a container's,
// keeps a block device mounted that the host does not have; a stale bind
// in the host namespace lists the host's processes, this test's among
// them with the cgroup it was put in.
func TestContainersNamedByAudit(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "nsenter", "mount", "sleep", "losetup", "mkfs.ext4")
	bin := privtest.Binary(t)
	parent := privtest.Cgroup(t)
	unit := privtest.ChildCgroup(t, parent, "mntleak-audit-test.service")
	dir := t.TempDir()
	dev := privtest.LoopDevice(t, 32)
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	h, second, ids := twoContainersHolding(t, parent, "mount "+dev+" "+vol)
	hostSleeper := exec.Command("sleep", "600")
	if err := hostSleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hostSleeper.Process.Kill(); _ = hostSleeper.Wait() })
	privtest.MoveToCgroup(t, unit, hostSleeper.Process.Pid)
	a, b := filepath.Join(dir, "a"), filepath.Join(dir, "b")
	if err := os.WriteFile(a, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(b, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	privtest.Mount(t, a, b, "", unix.MS_BIND, "")
	if err := os.Remove(a); err != nil {
		t.Fatal(err)
	}

	code, items := auditOf(t, bin, dir)
	type named struct {
		PID             int
		Comm            string
		Container, Unit string
	}
	var kinds []string
	var holders []named
	var hostSleeperNamed []named
	for _, it := range items {
		kinds = append(kinds, it.Kind+" "+it.What)
		for _, p := range it.Processes {
			switch {
			case it.What == "block-device":
				holders = append(holders, named{p.PID, p.Comm, p.Container, p.Unit})
			case it.What == "stale-bind" && p.PID == hostSleeper.Process.Pid:
				hostSleeperNamed = append(hostSleeperNamed, named{p.PID, p.Comm, p.Container, p.Unit})
			}
		}
	}
	slices.Sort(kinds)
	if want := []string{"leak block-device", "leak stale-bind"}; code != exitError || !slices.Equal(kinds, want) {
		t.Fatalf("audit %s: exit %d, items %v; want exit %d and %v", dir, code, kinds, exitError, want)
	}
	want := []named{{h.PID, "sleep", ids[0], ""}, {second, "sleep", ids[1], "docker-" + ids[1] + ".scope"}}
	slices.SortFunc(holders, func(a, b named) int { return a.PID - b.PID })
	slices.SortFunc(want, func(a, b named) int { return a.PID - b.PID })
	if !slices.Equal(holders, want) {
		t.Errorf("the block device's holders %+v, want %+v", holders, want)
	}
	if want := []named{{hostSleeper.Process.Pid, "sleep", "", "mntleak-audit-test.service"}}; !slices.Equal(hostSleeperNamed, want) {
		t.Errorf("the host's sleeper in the stale bind's item: %+v, want %+v", hostSleeperNamed, want)
	}
}
