package main

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// whyText runs the real `mntleak why` (text form, no persistent lineage)
// and returns its exit code, stdout and stderr.
func whyText(t *testing.T, bin, target string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bin, "why", "--state-dir", "", target)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	_ = cmd.Run()
	return cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()
}

// TestFreedDeviceIsNotHeld: a holder in a private namespace kept a loop
// device's copy and was killed; the device is free (mkfs.ext4 succeeds), so
// `mntleak why` says nothing holds it and exits 0, at once and seconds
// later. It printed "HELD /dev/loopN (7:N): 0 namespaces, 0 processes",
// "cause: invalid", an empty "fix:" and exited 1 whenever one process of
// the node (here PID 1) could not be read.
func TestFreedDeviceIsNotHeld(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "mount", "losetup", "mkfs.ext4")
	bin := privtest.Binary(t)
	dev := privtest.LoopDevice(t, 32)
	dir := privtest.Mkdir(t, filepath.Join(t.TempDir(), "vol"))
	h := privtest.StartHolder(t, "private", "mount "+dev+" "+dir)

	code, stdout, stderr := whyText(t, bin, dev)
	if code != exitError {
		t.Fatalf("while the holder runs: why %s: exit %d, stdout %q, stderr %q", dev, code, stdout, stderr)
	}

	if err := h.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = h.Cmd.Wait()
	privtest.WaitFor(t, 5*time.Second, "mkfs.ext4 on the freed "+dev, func() bool {
		return exec.Command("mkfs.ext4", "-q", "-F", dev).Run() == nil
	})
	want := "nothing holds " + dev + "\n"
	for _, after := range []time.Duration{0, 3 * time.Second} {
		time.Sleep(after)
		code, stdout, stderr := whyText(t, bin, dev)
		if code != exitOK || stdout != want {
			t.Errorf("%v after the device was freed: why %s: exit %d, stdout %q (want exit 0, %q), stderr %q",
				after, dev, code, stdout, want, stderr)
		}
		code, stdout, _ = whyText(t, bin, majMinOf(t, dev))
		if code != exitOK || stdout != "nothing holds "+majMinOf(t, dev)+"\n" {
			t.Errorf("%v after: why %s: exit %d, stdout %q", after, majMinOf(t, dev), code, stdout)
		}
	}
}

// protectedProcesses is the kernel's own answer to which processes root
// cannot read: those whose mount namespace link it is refused, named as
// comm[pid] (the comm is world-readable), in pid order.
func protectedProcesses(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil {
			if _, err := os.Readlink("/proc/" + e.Name() + "/ns/mnt"); errors.Is(err, fs.ErrPermission) {
				pids = append(pids, pid)
			}
		}
	}
	sort.Ints(pids)
	var out []string
	for _, pid := range pids {
		comm, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
		out = append(out, strings.TrimSpace(string(comm))+"["+strconv.Itoa(pid)+"]")
	}
	return out
}

// TestWhySaysWhatItCouldNotReadOnce: `mntleak why` run as root on a node
// where the kernel refuses root one process (here PID 1, the sandbox's
// init) says so on stderr once, in a whole sentence naming the process; it
// said "… (protected even from root); everything else was", cut short.
func TestWhySaysWhatItCouldNotReadOnce(t *testing.T) {
	privtest.Require(t)
	bin := privtest.Binary(t)
	dir := t.TempDir()
	protected := protectedProcesses(t)
	if len(protected) != 1 {
		t.Skipf("the kernel refuses root %d processes here (%v): the exact note is tested with one", len(protected), protected)
	}
	code, stdout, stderr := whyText(t, bin, dir)
	own, err := os.Readlink("/proc/self/ns/mnt")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile(`^mntleak why: view: mntleak's own mount namespace mnt:` + regexp.QuoteMeta(strings.TrimPrefix(own, "mnt:")) +
		` on the node's root; note: 1 of [0-9]+ processes could not be read: ` + regexp.QuoteMeta(protected[0]) +
		`, which the kernel protects even from root; everything else was read\n$`)
	if code != exitOK || stdout != "nothing holds "+dir+"\n" || !want.MatchString(stderr) {
		t.Errorf("why %s: exit %d, stdout %q, stderr %q; want exit 0, %q and stderr matching %s",
			dir, code, stdout, stderr, "nothing holds "+dir+"\n", want)
	}
}
