package tracer

import (
	"bytes"
	"encoding/binary"
	"reflect"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/mntleak/mntleak/event"
)

// cstr copies s into a fixed-size C char array ([16]int8, [512]int8...).
func cstr[T any](s string) T {
	var a T
	v := reflect.ValueOf(&a).Elem()
	for i := 0; i < len(s) && i < v.Len()-1; i++ {
		v.Index(i).SetInt(int64(s[i]))
	}
	return a
}

// argvBytes lays out arguments as the kernel keeps them: NUL-separated.
func argvBytes(args ...string) [256]int8 {
	var a [256]int8
	i := 0
	for _, arg := range args {
		for _, c := range []byte(arg) {
			a[i] = int8(c)
			i++
		}
		i++ // NUL
	}
	return a
}

// header returns a filled event_header for kind.
func header(kind event.Kind, nr int32, ret int64, trunc uint32) mountEventHeader {
	return mountEventHeader{
		TsNs: 1_000_000_123, CgroupId: 4242, Ret: ret, Kind: uint32(kind),
		Tgid: 3970, Tid: 3971, Ptgid: 1, Uid: 0, Mntns: 4026531840,
		SyscallNr: nr, Truncated: trunc, Comm: cstr[[16]int8]("runc"),
	}
}

// withHeader sets the Hdr field of a generated record (each object's
// generated header type has the same layout, so it converts).
func withHeader(rec any, h mountEventHeader) any {
	v := reflect.ValueOf(rec).Elem().FieldByName("Hdr")
	v.Set(reflect.ValueOf(h).Convert(v.Type()))
	return rec
}

// packedLayout reads a generated record struct the way bpf/mntleak.h
// says its record goes out: the fields up to the first char array (after
// the header) are its fixed part; when the char arrays all come last, each
// is a packed string (the failure record's do not: it goes out whole).
func packedLayout(rec any) (fixed, strs int) {
	v := reflect.ValueOf(rec).Elem()
	size := binary.Size(rec)
	fixed = -1
	off := 0
	for i := 0; i < v.NumField(); i++ {
		f := v.Field(i)
		isStr := v.Type().Field(i).Name != "Hdr" && f.Kind() == reflect.Array && f.Type().Elem().Kind() == reflect.Int8
		switch {
		case isStr && fixed < 0:
			fixed, strs = off, 1
		case isStr:
			strs++
		case fixed >= 0: // a field after a string: the record is not packed
			return size, 0
		}
		off += int(f.Type().Size())
	}
	if fixed < 0 {
		return size, 0
	}
	return fixed, strs
}

// wire is the record the BPF side sends for a generated struct: the
// struct, or for a packed kind its fixed part and each char array's string
// with its NUL.
func wire(t *testing.T, rec any) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := binary.Write(&buf, binary.NativeEndian, rec); err != nil {
		t.Fatal(err)
	}
	b := buf.Bytes()
	fixed, strs := packedLayout(rec)
	if strs == 0 {
		return b
	}
	out := append([]byte(nil), b[:fixed]...)
	v := reflect.ValueOf(rec).Elem()
	off := 0
	for i := 0; i < v.NumField(); i++ {
		n := int(v.Field(i).Type().Size())
		if off >= fixed {
			s := b[off : off+n]
			if j := bytes.IndexByte(s, 0); j >= 0 {
				s = s[:j]
			}
			out = append(append(out, s...), 0)
		}
		off += n
	}
	return out
}

// TestDecodeGeneratedLayouts encodes records through the structs bpf2go
// generated from bpf/mntleak.h and decodes them with package event: a
// layout change on either side fails here, without root.
func TestDecodeGeneratedLayouts(t *testing.T) {
	common := event.Event{
		MonoNS: 1_000_000_123, CgroupID: 4242, PID: 3970, TID: 3971, PPID: 1,
		MntNS: 4026531840, Comm: "runc",
	}
	tests := []struct {
		name string
		rec  any
		want func(e *event.Event)
	}{
		{"mount", withHeader(&mountMountEvent{
			Flags: unix.MS_BIND | unix.MS_REC, Fstype: cstr[[32]int8](""),
			Source: cstr[[512]int8]("/"), Target: cstr[[512]int8]("/run/c/rootfs/./rootfs"),
			Data: cstr[[128]int8]("mode=755"),
		}, header(event.KindMount, 165, 0, 2)), func(e *event.Event) {
			e.Kind, e.SyscallNr, e.Syscall = event.KindMount, 165, "mount"
			e.Flags, e.FlagNames = unix.MS_BIND|unix.MS_REC, "MS_BIND|MS_REC"
			e.Source, e.Target, e.Data = "/", "/run/c/rootfs/rootfs", "mode=755"
			e.Truncated = []string{"target"}
		}},
		{"umount", withHeader(&mountUmountEvent{Flags: unix.MNT_DETACH, CwdMntId: 77, RootMntId: 1, Target: cstr[[512]int8]("/srv/vol")},
			header(event.KindUmount, 166, -16, 0)), func(e *event.Event) {
			e.Kind, e.SyscallNr, e.Syscall, e.Ret, e.Errno = event.KindUmount, 166, "umount2", -16, "EBUSY"
			e.Flags, e.FlagNames, e.Target = unix.MNT_DETACH, "MNT_DETACH", "/srv/vol"
			e.CwdMntID, e.RootMntID = 77, 1
		}},
		{"pivot_root", withHeader(&mountPivotRootEvent{NewRoot: cstr[[512]int8]("/m/merged"), PutOld: cstr[[512]int8]("/m/merged")},
			header(event.KindPivotRoot, 155, 0, 0)), func(e *event.Event) {
			e.Kind, e.SyscallNr, e.Syscall = event.KindPivotRoot, 155, "pivot_root"
			e.NewRoot, e.PutOld = "/m/merged", "/m/merged"
		}},
		{"unshare", withHeader(&nsprocNsEvent{Flags: unix.CLONE_NEWNS, Fd: -1, MntnsBefore: 4026531840, MntnsAfter: 4026532290},
			header(event.KindUnshare, 272, 0, 0)), func(e *event.Event) {
			e.Kind, e.SyscallNr, e.Syscall = event.KindUnshare, 272, "unshare"
			e.Flags, e.FlagNames, e.MntNSBefore, e.MntNSAfter = unix.CLONE_NEWNS, "CLONE_NEWNS", 4026531840, 4026532290
		}},
		{"setns", withHeader(&nsprocNsEvent{Flags: unix.CLONE_NEWNS, Fd: 3, MntnsBefore: 1, MntnsAfter: 2, TargetIno: 2},
			header(event.KindSetns, 308, 0, 0)), func(e *event.Event) {
			e.Kind, e.SyscallNr, e.Syscall = event.KindSetns, 308, "setns"
			e.Flags, e.FlagNames, e.FD, e.MntNSBefore, e.MntNSAfter, e.TargetIno = unix.CLONE_NEWNS, "CLONE_NEWNS", 3, 1, 2, 2
		}},
		{"newns_fork", withHeader(&nsprocForkEvent{ChildTgid: 4000, ChildTid: 4000, ParentMntns: 1, ChildMntns: 2},
			header(event.KindNewNSFork, -1, 0, 0)), func(e *event.Event) {
			e.Kind, e.SyscallNr = event.KindNewNSFork, -1
			e.ChildPID, e.ChildTID, e.ParentMntNS, e.ChildMntNS = 4000, 4000, 1, 2
		}},
		{"exit", withHeader(&nsprocExitEvent{ExitCode: 256}, header(event.KindExit, -1, 0, 0)), func(e *event.Event) {
			e.Kind, e.SyscallNr, e.ExitCode = event.KindExit, -1, 256
		}},
		{"open_tree", withHeader(&newmountOpenTreeEvent{Flags: unix.OPEN_TREE_CLONE | unix.AT_RECURSIVE, Dfd: -100, MntId: 77, Path: cstr[[512]int8]("/")},
			header(event.KindOpenTree, 428, 5, 0)), func(e *event.Event) {
			e.Kind, e.SyscallNr, e.Syscall, e.Ret = event.KindOpenTree, 428, "open_tree", 5
			e.Flags, e.FlagNames = unix.OPEN_TREE_CLONE|unix.AT_RECURSIVE, "OPEN_TREE_CLONE|AT_RECURSIVE"
			e.DirFD, e.MntID, e.Path = -100, 77, "/"
		}},
		{"move_mount", withHeader(&newmountMoveMountEvent{Flags: unix.MOVE_MOUNT_F_EMPTY_PATH, FromDfd: 5, ToDfd: -100, MntId: 77,
			FromPath: cstr[[512]int8]("/"), ToPath: cstr[[512]int8]("/rootfs")},
			header(event.KindMoveMount, 429, -2, 1)), func(e *event.Event) {
			e.Kind, e.SyscallNr, e.Syscall, e.Ret, e.Errno = event.KindMoveMount, 429, "move_mount", -2, "ENOENT"
			e.Flags, e.FlagNames = unix.MOVE_MOUNT_F_EMPTY_PATH, "MOVE_MOUNT_F_EMPTY_PATH"
			e.FromFD, e.ToFD, e.MntID, e.FromPath, e.ToPath = 5, -100, 77, "/", "/rootfs"
			e.Truncated = []string{"from_path"}
		}},
		{"fsopen", withHeader(&newmountFsopenEvent{Flags: 1, Fstype: cstr[[32]int8]("ext4")},
			header(event.KindFsopen, 430, 3, 4)), func(e *event.Event) {
			e.Kind, e.SyscallNr, e.Syscall, e.Ret = event.KindFsopen, 430, "fsopen", 3
			e.Flags, e.FlagNames, e.FSType, e.Truncated = 1, "CLOEXEC", "ext4", []string{"fstype"}
		}},
		{"fsmount", withHeader(&newmountFsmountEvent{Flags: 1, AttrFlags: unix.MOUNT_ATTR_RDONLY, FsFd: 3, MntId: 78},
			header(event.KindFsmount, 432, 4, 0)), func(e *event.Event) {
			e.Kind, e.SyscallNr, e.Syscall, e.Ret = event.KindFsmount, 432, "fsmount", 4
			e.Flags, e.FlagNames, e.AttrFlags, e.FD, e.MntID = 1, "CLOEXEC", unix.MOUNT_ATTR_RDONLY, 3, 78
		}},
		{"mount_setattr", withHeader(&newmountMountSetattrEvent{Flags: unix.AT_RECURSIVE, AttrSet: 2, AttrClr: 1, Propagation: unix.MS_SLAVE,
			Dfd: -100, Path: cstr[[512]int8]("/host")},
			header(event.KindMountSetattr, 442, 0, 0)), func(e *event.Event) {
			e.Kind, e.SyscallNr, e.Syscall = event.KindMountSetattr, 442, "mount_setattr"
			e.Flags, e.FlagNames, e.AttrSet, e.AttrClr = unix.AT_RECURSIVE, "AT_RECURSIVE", 2, 1
			e.Propagation, e.PropagationName, e.DirFD, e.Path = unix.MS_SLAVE, "MS_SLAVE", -100, "/host"
		}},
		{"failure", withHeader(&failureFailureEvent{Fd: 3, Rdev: uint32(event.MakeDev(7, 3)), Dev: uint32(event.MakeDev(0, 6)),
			Path: cstr[[512]int8]("/dev/loop3"), CmdlineLen: 24, Cmdline: argvBytes("mkfs.ext4", "-F", "/dev/loop3")},
			header(event.KindFailure, 16, -16, 0)), func(e *event.Event) {
			e.Kind, e.SyscallNr, e.Syscall, e.Ret, e.Errno = event.KindFailure, 16, "ioctl", -16, "EBUSY"
			e.FD, e.RDev, e.Dev, e.Path = 3, event.MakeDev(7, 3), event.MakeDev(0, 6), "/dev/loop3"
			e.Cmdline = "mkfs.ext4 -F /dev/loop3"
		}},
	}
	seen := map[event.Kind]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := wire(t, tt.rec)
			got, err := event.Decode(rec)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			want := common
			tt.want(&want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("Decode:\n got %+v\nwant %+v", got, want)
			}
			fixed, strs := packedLayout(tt.rec)
			if wantFixed, wantStrs := event.RecordLayout(got.Kind); fixed != wantFixed || strs != wantStrs {
				t.Errorf("C record: %d fixed bytes and %d strings, decoder expects %d and %d", fixed, strs, wantFixed, wantStrs)
			}
			// A record one byte short must be refused, never half-read.
			if _, err := event.Decode(rec[:len(rec)-1]); err == nil {
				t.Error("Decode accepted a short record")
			}
			seen[got.Kind] = true
		})
	}
	for _, k := range event.KernelKinds() {
		if !seen[k] {
			t.Errorf("kind %s has no layout test", k)
		}
	}
}
