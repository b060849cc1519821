package kmount

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/event"
)

// statmountBuf is a struct statmount as the kernel writes it: the header,
// then the strings (mount options, fs type, root, mount point, subtype,
// source), each terminated, at the offsets the header gives.
func statmountBuf(mask uint64) []byte {
	strs := []string{"rw,size=8k", "fuse", "/", "/srv/vol", "sshfs", "me@host:/srv"}
	b := make([]byte, statmountHeader)
	ne := binary.NativeEndian
	ne.PutUint64(b[8:], mask)
	ne.PutUint32(b[16:], 0)     // sb_dev_major
	ne.PutUint32(b[20:], 38)    // sb_dev_minor
	ne.PutUint32(b[32:], 1)     // sb_flags
	ne.PutUint64(b[40:], 202)   // mnt_id
	ne.PutUint64(b[48:], 200)   // mnt_parent_id
	ne.PutUint32(b[56:], 102)   // mnt_id_old
	ne.PutUint64(b[64:], 2)     // mnt_attr
	ne.PutUint64(b[72:], 1<<18) // mnt_propagation
	ne.PutUint64(b[80:], 5)     // mnt_peer_group
	ne.PutUint64(b[88:], 6)     // mnt_master
	ne.PutUint64(b[96:], 7)     // propagate_from
	ne.PutUint64(b[112:], 50)   // mnt_ns_id
	var heap []byte
	for i, off := range []int{4, 36, 104, 108, 120, 124} {
		ne.PutUint32(b[off:], uint32(len(heap)))
		heap = append(append(heap, strs[i]...), 0)
	}
	b = append(b, heap...)
	ne.PutUint32(b[0:], uint32(len(b)))
	return b
}

func TestDecodeStatmount(t *testing.T) {
	m, err := Decode(statmountBuf(statmountAll))
	want := Mount{ID: 202, OldID: 102, Parent: 200, NS: 50, Dev: event.MakeDev(0, 38), Point: "/srv/vol", Root: "/", FSType: "fuse",
		Subtype: "sshfs", Source: "me@host:/srv", HasSource: true,
		Opts: "rw,size=8k", SBFlags: 1, Attr: 2, Prop: 1 << 18, Peer: 5, Master: 6, PropFrom: 7}
	if err != nil || m != want {
		t.Fatalf("%+v, %v; want %+v", m, err, want)
	}
	// A kernel before 6.14 sets neither bit: the mount has no source.
	m, err = Decode(statmountBuf(statmountAll &^ (statmountFSSubtype | statmountSBSource)))
	if want.Subtype, want.Source, want.HasSource = "", "", false; err != nil || m != want {
		t.Fatalf("%+v, %v; want %+v", m, err, want)
	}
	// Only the basic fields asked: no strings, no namespace id, no
	// propagate_from.
	m, err = Decode(statmountBuf(statmountSBBasic | statmountMntBasic))
	if err != nil || m.Point != "" || m.FSType != "" || m.NS != 0 || m.PropFrom != 0 || m.ID != 202 {
		t.Fatalf("%+v, %v; want the basic fields only", m, err)
	}
	for _, tc := range []struct {
		name string
		b    func() []byte
		want string
	}{
		{"short", func() []byte { return make([]byte, statmountHeader-1) }, "statmount: 511 bytes, want at least 512"},
		{"size below the header", func() []byte {
			b := statmountBuf(statmountAll)
			binary.NativeEndian.PutUint32(b[0:], statmountHeader-1)
			return b
		}, "statmount: size 511 out of"},
		{"size beyond the buffer", func() []byte {
			b := statmountBuf(statmountAll)
			binary.NativeEndian.PutUint32(b[0:], uint32(len(b)+1))
			return b
		}, "out of"},
		{"no mount basics", func() []byte { return statmountBuf(statmountSBBasic | statmountMntPoint) }, "lacks the basic fields"},
		{"no superblock basics", func() []byte { return statmountBuf(statmountMntBasic | statmountMntPoint) }, "lacks the basic fields"},
		{"a string beyond the size", func() []byte {
			b := statmountBuf(statmountAll)
			binary.NativeEndian.PutUint32(b[108:], uint32(len(b)-statmountHeader))
			return b
		}, "beyond"},
		{"a string not terminated", func() []byte {
			b := statmountBuf(statmountAll)
			b[len(b)-1] = 'x'
			return b
		}, "not terminated"},
	} {
		if _, err := Decode(tc.b()); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err %v, want %q", tc.name, err, tc.want)
		}
	}
}

// struct mnt_id_req (VER1): size, spare, mnt_id, param, mnt_ns_id.
func TestMntIDReq(t *testing.T) {
	b := mntIDReq(1, 2, 3)
	ne := binary.NativeEndian
	if len(b) != 32 || ne.Uint32(b[0:]) != 32 || ne.Uint32(b[4:]) != 0 || ne.Uint64(b[8:]) != 1 || ne.Uint64(b[16:]) != 2 || ne.Uint64(b[24:]) != 3 {
		t.Fatalf("%v", b)
	}
}
