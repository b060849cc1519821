package oracle

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImportsNothingOfTheEngine: the oracle is independent of the code it
// checks: no package of this module among its dependencies.
func TestImportsNothingOfTheEngine(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	for _, p := range strings.Fields(string(out)) {
		if strings.HasPrefix(p, "github.com/mntleak/mntleak") && p != "github.com/mntleak/mntleak/e2e/oracle" {
			t.Errorf("the oracle depends on %s", p)
		}
	}
}

func TestParseMountinfoLine(t *testing.T) {
	m, err := parseMountinfoLine(`36 35 7:3 / /mnt/a\040b rw,relatime shared:1 - ext4 /dev/loop3 rw`)
	if err != nil {
		t.Fatal(err)
	}
	if m.OldID != 36 || m.Major != 7 || m.Minor != 3 || m.Point != "/mnt/a b" || m.FSType != "ext4" || m.Source != "/dev/loop3" {
		t.Errorf("%+v", m)
	}
	for _, bad := range []string{"", "36 35 7:3 / /mnt", "x 35 7:3 / /mnt rw - ext4 s rw", "36 35 7 / /mnt rw - ext4 s rw"} {
		if _, err := parseMountinfoLine(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
}

func TestDecodeStatmountChecksLengths(t *testing.T) {
	b := make([]byte, statmountHdrSize+8)
	if _, err := decodeStatmount(b[:100]); err == nil {
		t.Error("a short buffer decoded")
	}
	b[0] = byte(len(b)) // size 520: strings at 512..519
	b[1] = byte(len(b) >> 8)
	copy(b[statmountHdrSize:], "ext4\x00/\x00")
	b[104] = 5 // mnt_root at 517
	b[108] = 5
	b[124] = 5
	m, err := decodeStatmount(b)
	if err != nil || m.FSType != "ext4" || m.Root != "/" {
		t.Errorf("%+v %v", m, err)
	}
	b[36] = 200 // fs_type beyond size
	if _, err := decodeStatmount(b); err == nil {
		t.Error("a string beyond the size decoded")
	}
}

func TestMapFilesRef(t *testing.T) {
	if got, err := mapFilesRef("/proc/7", "00400000-00401000"); err != nil || got != "/proc/7/map_files/400000-401000" {
		t.Errorf("%q %v", got, err)
	}
	if _, err := mapFilesRef("/proc/7", "x-1"); err == nil {
		t.Error("a bad range made a link")
	}
}
