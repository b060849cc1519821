package event

import (
	"encoding/binary"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// record builds a raw record of kind with the header filled and the
// kind-specific bytes left zero; fill edits it further.
func record(kind Kind, fill func(b []byte)) []byte {
	size := RecordSize(kind)
	if size == 0 {
		size = HeaderSize
	}
	b := make([]byte, size)
	binary.NativeEndian.PutUint32(b[24:], uint32(kind))
	binary.NativeEndian.PutUint32(b[28:], 10) // tgid
	binary.NativeEndian.PutUint32(b[48:], 84) // syscall_nr: rmdir
	copy(b[56:], "rmdir")
	if fill != nil {
		fill(b)
	}
	return b
}

// packedRecord builds a record of a packed kind: record's fixed part,
// then each string with its NUL.
func packedRecord(kind Kind, strs ...string) []byte {
	fixed, _ := RecordLayout(kind)
	b := record(kind, nil)[:fixed]
	for _, s := range strs {
		b = append(append(b, s...), 0)
	}
	return b
}

func TestDecodePacked(t *testing.T) {
	longest := "/" + strings.Repeat("a", pathLen-2) // with its NUL, the whole field
	tests := []struct {
		name string
		rec  []byte
		want func(e *Event)
	}{
		{"mount", packedRecord(KindMount, "tmpfs", "none", "/run/./x", "mode=755"), func(e *Event) {
			e.FSType, e.Source, e.Target, e.Data = "tmpfs", "none", "/run/x", "mode=755"
		}},
		{"empty strings", packedRecord(KindMount, "", "", "", ""), func(e *Event) {}},
		{"a path that fills its field", packedRecord(KindUmount, longest), func(e *Event) { e.Target = longest }},
		// A perf sample is padded to 8 bytes: what follows the last string is not read.
		{"padding after the strings", append(packedRecord(KindMoveMount, "/a", "/b"), 0, 0, 0), func(e *Event) {
			e.FromPath, e.ToPath = "/a", "/b"
		}},
		{"pivot_root", packedRecord(KindPivotRoot, "/new", "/new/old"), func(e *Event) { e.NewRoot, e.PutOld = "/new", "/new/old" }},
		{"open_tree", packedRecord(KindOpenTree, "/src"), func(e *Event) { e.Path = "/src" }},
		{"fsopen", packedRecord(KindFsopen, "ext4"), func(e *Event) { e.FSType = "ext4" }},
		{"mount_setattr", packedRecord(KindMountSetattr, "/host"), func(e *Event) { e.Path = "/host" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Decode(tt.rec)
			if err != nil {
				t.Fatal(err)
			}
			want, err := Decode(record(got.Kind, nil)) // the same header, every string empty
			if err != nil {
				t.Fatal(err)
			}
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Decode:\n got %+v\nwant %+v", got, want)
			}
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	tests := []struct {
		name    string
		rec     []byte
		wantErr string
	}{
		{"empty", nil, "shorter than the 72-byte header"},
		{"short header", make([]byte, HeaderSize-1), "shorter than the 72-byte header"},
		{"zero kind", make([]byte, 4096), "unknown kind 0"},
		{"kind past the end", record(kindMax, nil), "unknown kind 15"},
		{"lost is never sent by the kernel", record(KindLost, nil), "unknown kind 14"},
		{"short failure", record(KindFailure, nil)[:HeaderSize+20], "decode failure event: record of 92 bytes, want 1184"},
		{"short mount", record(KindMount, nil)[:RecordSize(KindMount)-1], "record of 83 bytes, want at least 84"},
		{"mount string without its NUL", packedRecord(KindMount, "tmpfs", "none", "/mnt", "mode=755")[:HeaderSize+8+6+5+5+8],
			"decode mount event: string 4 of 4 has no NUL within its 128-byte field and the record"},
		{"string longer than its field", packedRecord(KindFsopen, strings.Repeat("x", fstypeLen)),
			"decode fsopen event: string 1 of 1 has no NUL within its 32-byte field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode(tt.rec)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Decode error %v, want %q", err, tt.wantErr)
			}
		})
	}
}

func TestDecodeStrings(t *testing.T) {
	pathOff := HeaderSize + 16 // failure: fd, rdev, dev, pad
	tests := []struct {
		name string
		path string // written into the field as is (no NUL if it fills it)
		want string
	}{
		{"plain", "/dev/loop3", "/dev/loop3"},
		{"dot components", "/srv/./vol//x/.", "/srv/vol/x"},
		{"dotdot kept", "/srv/link/../x", "/srv/link/../x"},
		{"relative left alone", "tmpfs", "tmpfs"},
		{"fills the field", "/" + strings.Repeat("a", pathLen-1), "/" + strings.Repeat("a", pathLen-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, err := Decode(record(KindFailure, func(b []byte) { copy(b[pathOff:], tt.path) }))
			if err != nil {
				t.Fatal(err)
			}
			if ev.Path != tt.want {
				t.Errorf("path %q, want %q", ev.Path, tt.want)
			}
		})
	}
}

func TestDecodeTruncationBits(t *testing.T) {
	ev, err := Decode(record(KindMount, func(b []byte) {
		binary.NativeEndian.PutUint32(b[52:], truncPath1|truncPath2|truncFSType|truncData)
	}))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"source", "target", "fstype", "data"}; !reflect.DeepEqual(ev.Truncated, want) {
		t.Errorf("truncated %v, want %v", ev.Truncated, want)
	}
}

func TestFlagNames(t *testing.T) {
	tests := []struct {
		kind  Kind
		flags uint64
		want  string
	}{
		{KindMount, unix.MS_BIND | unix.MS_REC, "MS_BIND|MS_REC"},
		{KindMount, unix.MS_REC | unix.MS_PRIVATE, "MS_REC|MS_PRIVATE"},
		{KindMount, unix.MS_MGC_VAL | unix.MS_RDONLY, "MS_RDONLY"},
		{KindMount, 0, ""},
		{KindUmount, unix.MNT_DETACH | 0x100, "MNT_DETACH|0x100"},
		{KindUnshare, unix.CLONE_NEWNS | unix.CLONE_NEWUSER, "CLONE_NEWNS|CLONE_NEWUSER"},
		{KindOpenTree, unix.OPEN_TREE_CLONE | unix.AT_RECURSIVE, "OPEN_TREE_CLONE|AT_RECURSIVE"},
		{KindMoveMount, unix.MOVE_MOUNT_F_EMPTY_PATH, "MOVE_MOUNT_F_EMPTY_PATH"},
		{KindMountSetattr, unix.AT_RECURSIVE, "AT_RECURSIVE"},
		{KindFailure, 1, ""},
	}
	for _, tt := range tests {
		if got := FlagNames(tt.kind, tt.flags); got != tt.want {
			t.Errorf("FlagNames(%s, %#x) = %q, want %q", tt.kind, tt.flags, got, tt.want)
		}
	}
}

func TestNames(t *testing.T) {
	if got := SyscallName(263); got != "unlinkat" {
		t.Errorf("SyscallName(263) = %q", got)
	}
	if got := SyscallName(467); got != "open_tree_attr" {
		t.Errorf("SyscallName(467) = %q", got)
	}
	if got := SyscallName(9999); got != "syscall_9999" {
		t.Errorf("SyscallName(9999) = %q", got)
	}
	if got := ErrnoName(16); got != "EBUSY" {
		t.Errorf("ErrnoName(16) = %q", got)
	}
	if got := ErrnoName(5000); got != "errno 5000" {
		t.Errorf("ErrnoName(5000) = %q", got)
	}
	if got := PropagationName(unix.MS_SLAVE); got != "MS_SLAVE" {
		t.Errorf("PropagationName = %q", got)
	}
}

func TestDev(t *testing.T) {
	d := MakeDev(253, 1)
	if d.Major() != 253 || d.Minor() != 1 || d.String() != "253:1" {
		t.Errorf("MakeDev(253,1) = %d %d %q", d.Major(), d.Minor(), d)
	}
	for _, bad := range []string{"", "7", "7:", ":3", "a:b", "7:3:1", "5000:1"} {
		if _, err := ParseDev(bad); err == nil {
			t.Errorf("ParseDev(%q) accepted", bad)
		}
	}
	if got, err := ParseDev("7:3"); err != nil || got != MakeDev(7, 3) {
		t.Errorf("ParseDev(7:3) = %v, %v", got, err)
	}
}

// TestJSONRoundTrip: a recorded JSON line decodes back into the same event,
// which replay depends on.
func TestJSONRoundTrip(t *testing.T) {
	ev, err := Decode(record(KindFailure, func(b []byte) {
		binary.NativeEndian.PutUint64(b[16:], uint64(^uint64(15))) // ret -16
		binary.NativeEndian.PutUint32(b[HeaderSize:], 3)
		binary.NativeEndian.PutUint32(b[HeaderSize+4:], uint32(MakeDev(7, 3)))
		copy(b[HeaderSize+16:], "/dev/loop3")
		off := HeaderSize + 16 + pathLen + cmdlineLen
		binary.NativeEndian.PutUint32(b[off:], 0xc138fd04) // DM_DEV_REMOVE
		binary.NativeEndian.PutUint32(b[off+4:], 2)
		copy(b[off+8:], "1\nX") // X: past payload_len, not kept
	}))
	if err != nil {
		t.Fatal(err)
	}
	if ev.IoctlCmd != 0xc138fd04 || string(ev.Payload) != "1\n" {
		t.Errorf("ioctl_cmd %#x payload %q, want 0xc138fd04 \"1\\n\"", ev.IoctlCmd, ev.Payload)
	}
	ev.Teardown = &Teardown{Op: "zram hot_remove 1", Device: "/dev/zram1", Dev: MakeDev(252, 1)}
	ev.Time = time.Date(2026, 11, 21, 12, 1, 2, 114000000, time.UTC)
	line, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"kind":"failure"`, `"errno":"EBUSY"`, `"rdev":"7:3"`, `"path":"/dev/loop3"`, `"syscall":"rmdir"`,
		`"teardown":{"op":"zram hot_remove 1","device":"/dev/zram1","dev":"252:1"}`} {
		if !strings.Contains(string(line), want) {
			t.Errorf("JSON %s lacks %s", line, want)
		}
	}
	var back Event
	if err := json.Unmarshal(line, &back); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, ev) {
		t.Errorf("round trip:\n got %+v\nwant %+v", back, ev)
	}
	if err := json.Unmarshal([]byte(`{"kind":"nonsense"}`), &back); err == nil {
		t.Error("unknown kind accepted")
	}
	if _, err := json.Marshal(&Event{}); err == nil {
		t.Error("an event without a kind marshalled")
	}
}

func TestText(t *testing.T) {
	at := time.Date(2026, 11, 21, 12, 1, 2, 114000000, time.Local)
	tests := []struct {
		ev   Event
		want string
	}{
		{Event{Kind: KindMount, Time: at, PID: 3970, TID: 3971, Comm: "runc", MntNS: 4026531840, SyscallNr: 165,
			Source: "/", Target: "/rootfs", FlagNames: "MS_BIND|MS_REC"},
			`12:01:02.114000 runc[3970/3971] mnt:[4026531840] mount "/" -> "/rootfs" flags=MS_BIND|MS_REC = 0`},
		{Event{Kind: KindFailure, Time: at, PID: 4121, TID: 4121, Comm: "mkfs.ext4", MntNS: 1, SyscallNr: 257,
			Syscall: "openat", Ret: -16, Errno: "EBUSY", FD: -1, Path: "/dev/loop3"},
			`12:01:02.114000 mkfs.ext4[4121] mnt:[1] failure openat "/dev/loop3" = -1 EBUSY`},
		{Event{Kind: KindExit, Time: at, PID: 5, TID: 5, Comm: "sh", MntNS: 1, SyscallNr: -1, ExitCode: 768},
			`12:01:02.114000 sh[5] mnt:[1] exit exit_code=768`},
		{Event{Kind: KindUmount, Time: at, PID: 5, TID: 5, Comm: "umount", MntNS: 1, SyscallNr: 166, Ret: -22, Errno: "EINVAL",
			Target: "/x", Truncated: []string{"target"}},
			`12:01:02.114000 umount[5] mnt:[1] umount "/x" = -1 EINVAL (truncated: target)`},
	}
	for _, tt := range tests {
		if got := tt.ev.Text(); got != tt.want {
			t.Errorf("Text:\n got %s\nwant %s", got, tt.want)
		}
	}
}

func TestFilter(t *testing.T) {
	mount := &Event{Kind: KindMount, PID: 10, Comm: "runc", MntNS: 100}
	fork := &Event{Kind: KindNewNSFork, PID: 1, ChildPID: 20, Comm: "systemd", MntNS: 100, ParentMntNS: 100, ChildMntNS: 200}
	tests := []struct {
		name   string
		f      Filter
		ev     *Event
		expect bool
	}{
		{"empty matches", Filter{}, mount, true},
		{"pid", Filter{PIDs: []uint32{10}}, mount, true},
		{"other pid", Filter{PIDs: []uint32{11}}, mount, false},
		{"fork child pid", Filter{PIDs: []uint32{20}}, fork, true},
		{"comm", Filter{Comms: []string{"runc", "dockerd"}}, mount, true},
		{"long comm truncated like the kernel", Filter{Comms: []string{"containerd-shim-runc-v2"}}, &Event{Comm: "containerd-shim"}, true},
		{"other comm", Filter{Comms: []string{"dockerd"}}, mount, false},
		{"mntns of caller", Filter{MntNS: []uint32{100}}, mount, true},
		{"mntns named by fork", Filter{MntNS: []uint32{200}}, fork, true},
		{"pid and comm both needed", Filter{PIDs: []uint32{10}, Comms: []string{"dockerd"}}, mount, false},
		{"lost events pass every filter", Filter{PIDs: []uint32{10}, Comms: []string{"dockerd"}, MntNS: []uint32{100}}, &Event{Kind: KindLost, Lost: 3, SyscallNr: -1}, true},
	}
	for _, tt := range tests {
		if got := tt.f.Match(tt.ev); got != tt.expect {
			t.Errorf("%s: Match = %v, want %v", tt.name, got, tt.expect)
		}
	}
}

func TestKinds(t *testing.T) {
	for _, k := range KernelKinds() {
		back, err := ParseKind(k.String())
		if err != nil || back != k || RecordSize(k) < HeaderSize {
			t.Errorf("kind %d: ParseKind(%q) = %v, %v; size %d", k, k, back, err, RecordSize(k))
		}
	}
	if RecordSize(KindInvalid) != 0 || KindInvalid.Valid() || Kind(99).String() != "kind(99)" {
		t.Error("invalid kinds not handled")
	}
}

// TestDecodeKeepsTheEventOffTheHeap: decoding a record allocates its
// strings, never the Event itself (a pointer into it handed back by a
// helper moved it to the heap: one allocation more for every event of a
// mount storm, 60,000 a second). Each record here has one string, the
// comm.
func TestDecodeKeepsTheEventOffTheHeap(t *testing.T) {
	for k := Kind(1); k < kindMax; k++ {
		if !k.FromKernel() {
			continue
		}
		b := record(k, nil)
		if n := testing.AllocsPerRun(100, func() { _, _ = Decode(b) }); n > 1 {
			t.Errorf("decoding a %s record: %v allocations, want 1 (its comm)", k, n)
		}
	}
}
