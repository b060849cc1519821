package procfs

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"
	"unsafe"

	"github.com/moby/sys/mountinfo"
)

// The copies of a mount in two tables one parser reads share one shape;
// other mounts do not, and another parser's copy is equal but its own.
func TestParserSharesShapes(t *testing.T) {
	p := newMountinfoParser()
	a, err := p.parse([]byte("22 1 254:0 / / rw shared:1 - ext4 /dev/vda rw\n23 22 0:40 / /srv rw - tmpfs t rw\n"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.parse([]byte("90 80 254:0 / / rw shared:1 - ext4 /dev/vda rw\n91 90 0:41 / /srv rw - tmpfs t rw\n"))
	if err != nil {
		t.Fatal(err)
	}
	if a[0].MountShape != b[0].MountShape || b[0].ID != 90 || b[0].Parent != 80 || a[0].ID != 22 {
		t.Errorf("the copies of / in two tables: shapes %p and %p, ids %d/%d and %d/%d; want one shape, their own ids",
			a[0].MountShape, b[0].MountShape, a[0].ID, a[0].Parent, b[0].ID, b[0].Parent)
	}
	if a[1].MountShape == b[1].MountShape || b[1].Minor != 41 {
		t.Errorf("two mounts on other devices share a shape")
	}
	c, err := newMountinfoParser().parse([]byte("22 1 254:0 / / rw shared:1 - ext4 /dev/vda rw\n"))
	if err != nil {
		t.Fatal(err)
	}
	if c[0].MountShape == a[0].MountShape || !c[0].Equal(a[0]) {
		t.Errorf("another parser's copy: the same shape %v, equal %v; want its own, equal", c[0].MountShape == a[0].MountShape, c[0].Equal(a[0]))
	}
}

// Past maxShapes an interner starts again: the shapes it gave keep their
// fields, a shape seen before the start is made anew, and those seen
// since are shared.
func TestShapesBound(t *testing.T) {
	var s shapes
	shape := func(i int) MountShape { return MountShape{Minor: i, Mountpoint: "/m" + strconv.Itoa(i)} }
	first := s.of(shape(0))
	for i := 1; i < maxShapes; i++ {
		s.of(shape(i))
	}
	if len(s.m) != maxShapes || s.of(shape(0)) != first {
		t.Fatalf("%d shapes, the first shared %v; want %d, shared", len(s.m), s.of(shape(0)) == first, maxShapes)
	}
	past := s.of(shape(maxShapes))
	if len(s.m) != 1 {
		t.Fatalf("after one shape more than %d: %d in the map, want 1 (a new map)", maxShapes, len(s.m))
	}
	if *first != shape(0) {
		t.Errorf("the first shape is now %+v, want %+v", *first, shape(0))
	}
	if again := s.of(shape(0)); again == first || *again != *first {
		t.Errorf("the first shape again: the old pointer %v, equal %v; want a new, equal one", again == first, *again == *first)
	}
	if s.of(shape(maxShapes)) != past {
		t.Errorf("a shape seen since the start is not shared")
	}
}

// A Mount is written as mountinfo.Info is, byte for byte: recordings made
// before and after it are alike. It is read back equal.
func TestMountJSONAsMountinfo(t *testing.T) {
	info := &mountinfo.Info{ID: 36, Parent: 35, Major: 98, Minor: 0, Root: "/mnt1", Mountpoint: "/mnt2", Options: "rw,noatime",
		Optional: "master:1", FSType: "ext3", Source: "/dev/root", VFSOptions: "rw,errors=continue"}
	want, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	m := MountOf(info)
	got, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("a Mount is written\n%s\nmountinfo.Info\n%s", got, want)
	}
	var back Mount
	if err := json.Unmarshal(got, &back); err != nil || back.MountShape == nil || !back.Equal(m) {
		t.Errorf("read back: %+v, %v; want %+v", back, err, *m)
	}
	// In a record, as a table.
	rec, err := json.Marshal(&Record{Op: OpMountinfo, Mounts: []*Mount{m}})
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(rec, append(append([]byte(`"mounts":[`), want...), ']')) {
		t.Errorf("a record's table is written %s, want its mounts as %s", rec, want)
	}
}

// A replayed table's entries have shapes, shared by the copies of a
// mount: one a recording wrote with no field of its shape gets an empty
// one (a field read would panic on none).
func TestReplaySharesShapes(t *testing.T) {
	var recs [2]*Record
	for i, line := range []string{
		`{"op":"mountinfo","pid":1,"mounts":[{"ID":1,"Parent":0,"Major":8,"Mountpoint":"/"},{"ID":2}]}`,
		`{"op":"mountinfo","pid":2,"mounts":[{"ID":7,"Parent":6,"Major":8,"Mountpoint":"/"}]}`,
	} {
		recs[i] = &Record{}
		if err := json.Unmarshal([]byte(line), recs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if recs[0].Mounts[1].MountShape != nil {
		t.Fatal("encoding/json made a shape for a mount with none of its fields")
	}
	r := NewReplay()
	r.Add(recs[0])
	r.AddStep(recs[1:])
	_, a, err := r.Mountinfo(1)
	if err != nil {
		t.Fatal(err)
	}
	_, b, err := r.Mountinfo(2)
	if err != nil {
		t.Fatal(err)
	}
	if a[1].MountShape == nil || *a[1].MountShape != (MountShape{}) {
		t.Errorf("a mount recorded with no shape: %v, want an empty one", a[1].MountShape)
	}
	if a[0].MountShape != b[0].MountShape || b[0].ID != 7 || a[0].Mountpoint != "/" {
		t.Errorf("the copies of / in two replayed tables have shapes of their own")
	}
}

// NewMount gives an entry its ids and a shape of its own, a copy of the
// one it was given.
func TestNewMount(t *testing.T) {
	shape := MountShape{Major: 7, Minor: 3, Root: "/", Mountpoint: "/srv/vol", FSType: "ext4", Source: "/dev/loop3"}
	a := NewMount(12, 1, shape)
	b := NewMount(12, 1, shape)
	shape.Mountpoint = "/elsewhere"
	if a.ID != 12 || a.Parent != 1 || a.MountShape == nil || a.Mountpoint != "/srv/vol" || a.Major != 7 || a.Source != "/dev/loop3" {
		t.Fatalf("NewMount: %+v", a)
	}
	if a.MountShape == b.MountShape || !a.Equal(b) {
		t.Errorf("two entries of one shape: one shape %v, equal %v; want each its own, equal", a.MountShape == b.MountShape, a.Equal(b))
	}
	if c := NewMount(13, 1, *a.MountShape); a.Equal(c) {
		t.Errorf("entries of two ids are equal")
	}
}

// An entry is its two ids and a pointer: 24 bytes on a 64-bit machine,
// where mountinfo.Info is 144.
func TestMountIsSmall(t *testing.T) {
	if got, info := unsafe.Sizeof(Mount{}), unsafe.Sizeof(mountinfo.Info{}); got != 3*unsafe.Sizeof(0) || info != 4*unsafe.Sizeof(0)+7*unsafe.Sizeof("") {
		t.Errorf("Mount is %d bytes, mountinfo.Info %d", got, info)
	}
}
