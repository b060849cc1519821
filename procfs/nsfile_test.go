package procfs

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// envNSMountinfo makes the test binary, re-executed, print what
// Host.NSMountinfo answers for the file it names, and exit; with
// envNSMountinfoEntering set too, what the entering fallback (an older
// kernel's way) answers.
const (
	envNSMountinfo         = "MNTLEAK_TEST_NSMOUNTINFO"
	envNSMountinfoEntering = "MNTLEAK_TEST_NSMOUNTINFO_ENTERING"
)

// nsMountinfoChild is the re-executed binary's work (TestMain): the
// namespace, the number of mounts, then a line per mount: its source, its
// type and its mount point.
func nsMountinfoChild(file string) {
	read := Host{}.NSMountinfo
	if os.Getenv(envNSMountinfoEntering) != "" {
		read = Host{}.nsMountinfoEntering
	}
	ns, mounts, err := read(file)
	if err != nil {
		os.Stdout.WriteString("error " + err.Error() + "\n")
		os.Exit(1)
	}
	out := "mnt:[" + strconv.FormatUint(uint64(ns), 10) + "] " + strconv.Itoa(len(mounts)) + " mounts\n"
	for _, m := range mounts {
		out += m.Source + " " + m.FSType + " " + m.Mountpoint + "\n"
	}
	os.Stdout.WriteString(out)
	os.Exit(0)
}

// keptNamespace makes a mount namespace no process runs in, kept by a bind
// of its nsfs file in dir, with a tmpfs of source tag mounted at dir/vol
// in it (not in the test's namespace); it returns the file, the
// namespace's inode and the tmpfs's mount point. The bind goes at cleanup,
// and with it the namespace.
func keptNamespace(t *testing.T, dir, tag string) (string, uint32, string) {
	t.Helper()
	// An nsfs bind must not sit on a shared mount: a private one for it.
	pins := privtest.Mkdir(t, filepath.Join(dir, "pins"))
	privtest.Mount(t, pins, pins, "", unix.MS_BIND, "")
	if err := unix.Mount("", pins, "", unix.MS_PRIVATE, ""); err != nil {
		t.Fatalf("make %s private: %v", pins, err)
	}
	file := filepath.Join(pins, "mnt")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	vol := privtest.Mkdir(t, filepath.Join(dir, "vol"))
	ns := privtest.KeepNamespace(t, file, "mount", "-t", "tmpfs", "-o", "size=1m", tag, vol)
	return file, ns, vol
}

// ids is the sorted mount ids of a table.
func ids(mounts []*Mount) []int {
	var out []int
	for _, m := range mounts {
		out = append(out, m.ID)
	}
	slices.Sort(out)
	return out
}

// TestNSMountinfoInProcess reads mount tables through namespace files, in-process:
// a namespace no process runs in (kept by a bind of its file) gives its
// own table (its tmpfs, which the caller's namespace lacks); a live
// process's /proc/PID/ns/mnt gives the same mounts as its mountinfo; a file
// that is no mount namespace's is one error naming it. Afterwards no thread
// of the test is left in another namespace.
func TestNSMountinfoInProcess(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "mount")
	dir := t.TempDir()
	const tag = "mntleak-nsfile-test"
	kept, keptNS, vol := keptNamespace(t, dir, tag)
	holder := privtest.StartHolder(t, "private", "true")
	own := privtest.MountNS(t, "self")
	regular := filepath.Join(dir, "regular")
	if err := os.WriteFile(regular, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	holderFile := "/proc/" + strconv.Itoa(holder.PID) + "/ns/mnt"
	_, holderMounts, err := Host{}.Mountinfo(holder.PID)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		file    string
		wantNS  uint32
		check   func(t *testing.T, mounts []*Mount)
		wantErr string
	}{
		{name: "kept by a bind", file: kept, wantNS: keptNS, check: func(t *testing.T, mounts []*Mount) {
			i := slices.IndexFunc(mounts, func(m *Mount) bool { return m.Mountpoint == vol })
			if i < 0 || mounts[i].FSType != "tmpfs" || mounts[i].Source != tag {
				t.Errorf("no tmpfs %s at %s in the kept namespace's table (%d mounts)", tag, vol, len(mounts))
			}
		}},
		{name: "a live process's", file: holderFile, wantNS: holder.MntNS, check: func(t *testing.T, mounts []*Mount) {
			if got, want := ids(mounts), ids(holderMounts); !slices.Equal(got, want) {
				t.Errorf("mount ids %v, want those of /proc/%d/mountinfo %v", got, holder.PID, want)
			}
		}},
		{name: "a regular file", file: regular, wantErr: regular + " is not a namespace file"},
		{name: "a network namespace's", file: "/proc/self/ns/net", wantErr: "/proc/self/ns/net is not a mount namespace's file"},
		{name: "missing", file: filepath.Join(dir, "missing"), wantErr: "open " + filepath.Join(dir, "missing") + ": no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ns, mounts, err := Host{}.NSMountinfo(tt.file)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if ns != tt.wantNS {
				t.Errorf("namespace mnt:[%d], want mnt:[%d]", ns, tt.wantNS)
			}
			tt.check(t, mounts)
		})
	}
	// The caller's namespace never had the kept one's tmpfs.
	if ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(vol)); err != nil || len(ms) != 0 {
		t.Errorf("the test's namespace has %d mounts at %s (%v), want none", len(ms), vol, err)
	}
	// The entering threads end with their goroutines: the runtime ends such
	// a thread after Run has its answer, so the test waits (up to 5 s, the
	// machine may be loaded) until every thread left is in its namespace.
	var strays []string
	if !privtest.Poll(5*time.Second, func() bool {
		strays = threadsOutside(t, own)
		return len(strays) == 0
	}) {
		t.Errorf("threads %v are not in the test's mnt:[%d] 5 s after the reads", strays, own)
	}
}

// threadsOutside lists the process's threads (tid:namespace) whose mount
// namespace is not ns; a thread that ends while it is read is left out.
func threadsOutside(t *testing.T, ns uint32) []string {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, task := range tasks {
		var st unix.Stat_t
		err := unix.Stat("/proc/self/task/"+task.Name()+"/ns/mnt", &st)
		switch {
		case errors.Is(err, unix.ENOENT) || errors.Is(err, unix.ESRCH):
		case err != nil:
			t.Fatalf("stat the mount namespace of thread %s: %v", task.Name(), err)
		case uint32(st.Ino) != ns:
			out = append(out, fmt.Sprintf("%s:mnt:[%d]", task.Name(), st.Ino))
		}
	}
	return out
}

// TestNSMountinfoWithoutChroot: a kernel that reads another namespace's
// table by its id (listmount, statmount; Linux 6.14+ for the source) needs
// no thread of mntleak's in it: without CAP_SYS_CHROOT (root otherwise),
// which entering a mount namespace needs, the kept namespace's table is
// read, its tmpfs with its source. The entering fallback (older kernels)
// is refused there by the kernel, and its error says which capabilities
// it needs.
func TestNSMountinfoWithoutChroot(t *testing.T) {
	privtest.Require(t)
	privtest.RequireCommands(t, "unshare", "mount", "setpriv")
	const tag = "mntleak-nsfile-nochroot"
	file, ns, vol := keptNamespace(t, t.TempDir(), tag)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	noChroot := []string{"--bounding-set=-sys_chroot", "--inh-caps=-all"}
	table := "mnt:[" + strconv.FormatUint(uint64(ns), 10) + "] "
	mount := "\n" + tag + " tmpfs " + vol + "\n"
	for _, tc := range []struct {
		name     string
		setpriv  []string
		entering bool
		want     []string
	}{
		{"root", nil, false, []string{table, mount}},
		{"without CAP_SYS_CHROOT", noChroot, false, []string{table, mount}},
		{"root, entering", nil, true, []string{table, mount}},
		{"without CAP_SYS_CHROOT, entering", noChroot, true, []string{"needs CAP_SYS_ADMIN and CAP_SYS_CHROOT"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cmd := exec.Command("setpriv", append(append(tc.setpriv, "--"), self, "-test.run=^$")...)
			cmd.Env = append(os.Environ(), envNSMountinfo+"="+file)
			if tc.entering {
				cmd.Env = append(cmd.Env, envNSMountinfoEntering+"=1")
			}
			out, _ := cmd.CombinedOutput()
			for _, want := range tc.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("child said %q, want %q", out, want)
				}
			}
		})
	}
}
