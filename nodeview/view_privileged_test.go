package nodeview

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/e2e/testkit/privtest"
)

// TestDetectOnTheNode: on the node (this test's root is PID 1's) the view
// is mntleak's own; without hostPID it is blind.
func TestDetectOnTheNode(t *testing.T) {
	privtest.Require(t)
	v, err := Detect("/proc", true)
	if err != nil {
		t.Fatal(err)
	}
	if v.Kind != Own || v.Root != "/" || v.MntNS != v.Self || v.MntNS != privtest.MountNS(t, "self") {
		t.Errorf("on the node: %+v", v)
	}
	if !strings.HasPrefix(v.Line(), "view: mntleak's own mount namespace mnt:[") {
		t.Errorf("line %q", v.Line())
	}
	b, err := Detect("/proc", false)
	if err != nil || b.Kind != Blind || !strings.HasSuffix(b.Line(), " only") {
		t.Errorf("without hostPID: %+v %v %q", b, err, b.Line())
	}
}

// TestNodeRootView looks through another process's root, as a pod looks
// through /proc/1/root: a tmpfs mounted only in that process's namespace
// is crossed, an absolute symbolic link in it resolves in that tree (not
// in the caller's, where the target does not exist), ".." stops at the
// root, and magic links are refused.
func TestNodeRootView(t *testing.T) {
	privtest.Require(t)
	dir := t.TempDir()
	mnt := privtest.Mkdir(t, filepath.Join(dir, "mnt"))
	h := privtest.StartHolder(t, "private", fmt.Sprintf(
		"mount -t tmpfs -o size=1m mntleak-view %[1]s && mkdir %[1]s/etc && echo node >%[1]s/etc/config && ln -s %[1]s/etc/config %[1]s/link", mnt))
	v := View{Kind: NodeRoot, Root: fmt.Sprintf("/proc/%d/root", h.PID)}
	if _, err := os.Stat(mnt + "/etc/config"); !os.IsNotExist(err) {
		t.Fatalf("the tmpfs is visible in the test's own namespace: %v", err)
	}
	for _, tt := range []struct {
		path, want string
	}{
		{mnt + "/etc/config", "node\n"},
		{mnt + "/link", "node\n"},
		{"/../../.." + mnt + "/etc/config", "node\n"},
	} {
		b, err := v.ReadFile(tt.path)
		if err != nil || string(b) != tt.want {
			t.Errorf("ReadFile(%s) = %q, %v; want %q", tt.path, b, err, tt.want)
		}
	}
	st, err := v.Stat(mnt)
	if err != nil {
		t.Fatal(err)
	}
	var own = privtest.Run(t, "stat", "-c", "%d", mnt)
	if fmt.Sprint(st.Dev) == strings.TrimSpace(own) {
		t.Errorf("Stat(%s) gave the test's own directory (dev %d), not the tmpfs", mnt, st.Dev)
	}
	names, err := v.ReadDir(mnt)
	if err != nil || !slices.Equal(names, []string{"etc", "link"}) {
		t.Errorf("ReadDir(%s) = %v, %v", mnt, names, err)
	}
	if _, err := v.ReadFile("/proc/self/root/etc/hostname"); err == nil {
		t.Errorf("a magic link was followed")
	}
	if _, err := v.ReadFile(mnt + "/missing"); !IsNotExist(err) || !strings.Contains(err.Error(), v.Root+mnt+"/missing") {
		t.Errorf("a missing file: %v, want not-exist naming it", err)
	}
}

func TestMain(m *testing.M) { os.Exit(privtest.Main(m)) }
