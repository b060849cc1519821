package procfs

import (
	"bytes"
	"os"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"github.com/moby/sys/mountinfo"
)

// mountinfoSeeds are tables for the parser, good and bad: escapes, the
// optional fields, the old cifs source with a space, a CR, no newline at
// the end, bad escapes and device numbers, too few fields.
var mountinfoSeeds = []string{
	"",
	"22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n",
	"1 0 254:0 /a\\040b//deleted /x\\011y rw shared:1 master:2 unbindable - ext4 /dev/vda rw\n",
	"2 1 0:77 / /m rw - overlay overlay rw,lowerdir=/l1:/l2,upperdir=/u,workdir=/w\n3 3 0:4 net:[1] / rw - nsfs nsfs rw",
	"4 1 0:50 / /srv rw - cifs //srv/My Docs rw,unc=//srv/My Docs\r\n",
	"5 1 0:51 / /a\\0 rw - tmpfs t rw\n",
	"6 1 0:51 / /a\\08x rw - tmpfs t rw\n",
	"7 1 0:51 /\\777 /a rw - tmpfs t\\134 rw\n",
	"8 1 0:51:2 / /a rw - tmpfs t rw\n",
	"9 1 051 / /a rw - tmpfs t rw\n",
	"x y 1:2 / /a rw - tmpfs t rw\n",
	"10 1 0:5 / /a rw a b c d\n",
	"11 1 0:5 / /a rw\n",
	"12 1 0:5 / /a rw - tmpfs t rw\n\n13 1 0:5 / /b rw - tmpfs t rw\n",
	"14  1 0:5 / /a rw  - tmpfs t rw\n",
}

// The parser reads every table into the entries mountinfo's own parser
// (the oracle) reads, and fails where it fails.
func TestParseMountinfoAsMountinfoDoes(t *testing.T) {
	self, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, table := range append(mountinfoSeeds, string(self)) {
		sameAsMountinfo(t, table)
	}
}

func FuzzParseMountinfo(f *testing.F) {
	for _, s := range mountinfoSeeds {
		f.Add(s)
	}
	f.Fuzz(sameAsMountinfo)
}

func sameAsMountinfo(t *testing.T, table string) {
	want, wantErr := mountinfo.GetMountsFromReader(strings.NewReader(table), nil)
	if wantErr != nil && strings.Contains(wantErr.Error(), "token too long") {
		return // a line over bufio.Scanner's 64 KiB: no kernel writes one
	}
	got, err := newMountinfoParser().parse([]byte(table))
	if (err != nil) != (wantErr != nil) {
		t.Fatalf("parse %q: error %v, mountinfo's %v", table, err, wantErr)
	}
	if err != nil {
		return
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	wantMounts := make([]*Mount, len(want))
	for i, m := range want {
		wantMounts[i] = MountOf(m)
	}
	// DeepEqual compares the shapes by value.
	if !reflect.DeepEqual(got, wantMounts) {
		t.Fatalf("parse %q:\n got %+v\nwant %+v", table, deref(got), deref(wantMounts))
	}
}

// deref is ms with the shapes' fields in place of their addresses.
func deref(ms []*Mount) []any {
	out := make([]any, len(ms))
	for i, m := range ms {
		out[i] = struct {
			ID, Parent int
			MountShape
		}{m.ID, m.Parent, *m.MountShape}
	}
	return out
}

// The strings of a parsed table are the interned copies: two reads of one
// table share them.
func TestParseMountinfoInterns(t *testing.T) {
	table := []byte("22 1 254:0 /a /srv\\040x rw,relatime shared:1 - ext4 /dev/vda rw\n")
	a, err := newMountinfoParser().parse(table)
	if err != nil {
		t.Fatal(err)
	}
	b, err := newMountinfoParser().parse(bytes.Clone(table))
	if err != nil {
		t.Fatal(err)
	}
	for _, pair := range [][2]string{{a[0].Mountpoint, b[0].Mountpoint}, {a[0].Root, b[0].Root}, {a[0].Options, b[0].Options},
		{a[0].Optional, b[0].Optional}, {a[0].Source, b[0].Source}, {a[0].VFSOptions, b[0].VFSOptions}} {
		if pair[0] != pair[1] || unsafe.StringData(pair[0]) != unsafe.StringData(pair[1]) {
			t.Errorf("%q and %q are two copies", pair[0], pair[1])
		}
	}
}

// BenchmarkParseMountinfo reads this process's table as the snapshot reads
// each namespace's: compare its allocations with mountinfo's.
func BenchmarkParseMountinfo(b *testing.B) {
	table, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		b.Fatal(err)
	}
	b.Run("parser", func(b *testing.B) {
		p := newMountinfoParser()
		b.ReportAllocs()
		for b.Loop() {
			if _, err := p.parse(table); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("mountinfo and intern", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			ms, err := mountinfo.GetMountsFromReader(bytes.NewReader(table), nil)
			if err != nil {
				b.Fatal(err)
			}
			for _, m := range ms {
				intern(MountOf(m).MountShape)
			}
		}
	})
}
