package event

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
)

// Sizes of the fields and records in bpf/mntleak.h.
const (
	pathLen    = 512
	fstypeLen  = 32
	dataLen    = 128
	cmdlineLen = 256
	payloadLen = 320
	commLen    = 16

	HeaderSize  = 72
	sizeNS      = HeaderSize + 8 + 4*4
	sizeFork    = HeaderSize + 4*4
	sizeExit    = HeaderSize + 8
	sizeFsmount = HeaderSize + 2*8 + 2*4
	sizeFailure = HeaderSize + 4*4 + pathLen + cmdlineLen + 2*4 + payloadLen
)

// recordLayout is what a record of one kind is made of: its fixed part
// and, for a packed kind, how many strings follow it (each with its NUL,
// at most its C field's size). A record of a kind without strings (0) is
// its fixed part.
type recordLayout struct {
	fixed, strings int
}

var recordLayouts = [kindMax]recordLayout{
	KindMount:        {HeaderSize + 8, 4},       // fstype, source, target, data
	KindUmount:       {HeaderSize + 8 + 2*4, 1}, // target
	KindUnshare:      {sizeNS, 0},
	KindSetns:        {sizeNS, 0},
	KindNewNSFork:    {sizeFork, 0},
	KindExit:         {sizeExit, 0},
	KindPivotRoot:    {HeaderSize, 2},           // new_root, put_old
	KindOpenTree:     {HeaderSize + 8 + 2*4, 1}, // path
	KindMoveMount:    {HeaderSize + 8 + 4*4, 2}, // from_path, to_path
	KindFsopen:       {HeaderSize + 8, 1},       // fstype
	KindFsmount:      {sizeFsmount, 0},
	KindMountSetattr: {HeaderSize + 4*8 + 2*4, 1}, // path
	KindFailure:      {sizeFailure, 0},            // its strings in fixed fields
}

// RecordLayout returns the size of the fixed part of a record of kind k
// and the number of packed strings after it (0: the record is its fixed
// part), or 0, 0 for a kind the kernel never sends.
func RecordLayout(k Kind) (fixed, strings int) {
	if !k.FromKernel() {
		return 0, 0
	}
	l := recordLayouts[k]
	return l.fixed, l.strings
}

// RecordSize returns the least size of a record of kind k (its fixed part
// and an empty string for each packed one), or 0.
func RecordSize(k Kind) int {
	fixed, strings := RecordLayout(k)
	return fixed + strings
}

// Bits of event_header.truncated.
const (
	truncPath1 = 1 << iota
	truncPath2
	truncFSType
	truncData
)

// Decode turns one ring-buffer record into an Event. Time is left zero: the
// caller maps MonoNS to the wall clock.
func Decode(b []byte) (Event, error) {
	var ev Event
	if len(b) < HeaderSize {
		return ev, fmt.Errorf("decode event: record of %d bytes is shorter than the %d-byte header", len(b), HeaderSize)
	}
	kind := Kind(binary.NativeEndian.Uint32(b[24:]))
	if !kind.FromKernel() {
		return ev, fmt.Errorf("decode event: unknown kind %d", uint32(kind))
	}
	layout := recordLayouts[kind]
	if want := layout.fixed + layout.strings; len(b) < want {
		if layout.strings > 0 {
			return ev, fmt.Errorf("decode %s event: record of %d bytes, want at least %d", kind, len(b), want)
		}
		return ev, fmt.Errorf("decode %s event: record of %d bytes, want %d", kind, len(b), want)
	}

	r := cursor{b: b}
	trunc := decodeHeader(&r, &ev)
	r.packed = layout.strings > 0 // the header's comm is a fixed field
	var paths recordPaths
	switch kind {
	case KindMount, KindUmount, KindPivotRoot:
		paths = decodeMountRecord(&r, &ev, kind)
	case KindOpenTree, KindMoveMount, KindFsopen, KindFsmount, KindMountSetattr:
		paths = decodeNewMountRecord(&r, &ev, kind)
	case KindUnshare, KindSetns, KindNewNSFork, KindExit:
		decodeProcessRecord(&r, &ev, kind)
	case KindFailure:
		paths = decodeFailureRecord(&r, &ev)
	}
	if r.unended > 0 {
		return ev, fmt.Errorf("decode %s event: string %d of %d has no NUL within its %d-byte field and the record", kind, r.unended, layout.strings, r.unendedField)
	}

	if trunc&truncPath1 != 0 && paths.path1 != "" {
		ev.Truncated = append(ev.Truncated, paths.path1)
	}
	if trunc&truncPath2 != 0 && paths.path2 != "" {
		ev.Truncated = append(ev.Truncated, paths.path2)
	}
	if trunc&truncFSType != 0 {
		ev.Truncated = append(ev.Truncated, "fstype")
	}
	if trunc&truncData != 0 {
		ev.Truncated = append(ev.Truncated, "data")
	}
	ev.fillNames()
	return ev, nil
}

// recordPaths names, as Event.Truncated does, the fields of a record that
// its truncation bits truncPath1 and truncPath2 name ("": the record has
// none). The record's readers tidy those fields (tidyPath) themselves:
// they hand back names, not pointers into the event, so that Decode's
// Event stays on the stack (a pointer into it coming back from a call
// moved it to the heap: an allocation of every event).
type recordPaths struct {
	path1, path2 string
}

// decodeHeader reads struct event_header into ev and returns its truncated
// bits.
func decodeHeader(r *cursor, ev *Event) uint32 {
	ev.MonoNS = r.u64()
	ev.CgroupID = r.u64()
	ev.Ret = r.s64()
	ev.Kind = Kind(r.u32())
	ev.PID = r.u32()
	ev.TID = r.u32()
	ev.PPID = r.u32()
	ev.UID = r.u32()
	ev.MntNS = r.u32()
	ev.SyscallNr = r.s32()
	trunc := r.u32()
	ev.Comm = r.str(commLen)
	return trunc
}

// decodeMountRecord reads the body of a mount, umount or pivot_root record
// into ev.
func decodeMountRecord(r *cursor, ev *Event, kind Kind) recordPaths {
	var paths recordPaths
	switch kind {
	case KindMount:
		ev.Flags = r.u64()
		ev.FSType = r.str(fstypeLen)
		ev.Source = r.str(pathLen)
		ev.Target = r.str(pathLen)
		ev.Data = r.str(dataLen)
		ev.Source, ev.Target = tidyPath(ev.Source), tidyPath(ev.Target)
		paths = recordPaths{path1: "source", path2: "target"}
	case KindUmount:
		ev.Flags = r.u64()
		ev.CwdMntID = r.s32()
		ev.RootMntID = r.s32()
		ev.Target = r.str(pathLen)
		ev.Target = tidyPath(ev.Target)
		paths = recordPaths{path2: "target"}
	case KindPivotRoot:
		ev.NewRoot = r.str(pathLen)
		ev.PutOld = r.str(pathLen)
		ev.NewRoot, ev.PutOld = tidyPath(ev.NewRoot), tidyPath(ev.PutOld)
		paths = recordPaths{path1: "new_root", path2: "put_old"}
	}
	return paths
}

// decodeNewMountRecord reads the body of a record of the new mount API
// (open_tree, move_mount, fsopen, fsmount, mount_setattr) into ev.
func decodeNewMountRecord(r *cursor, ev *Event, kind Kind) recordPaths {
	var paths recordPaths
	switch kind {
	case KindOpenTree:
		ev.Flags = r.u64()
		ev.DirFD = r.s32()
		ev.MntID = r.s32()
		ev.Path = r.str(pathLen)
		ev.Path = tidyPath(ev.Path)
		paths = recordPaths{path1: "path"}
	case KindMoveMount:
		ev.Flags = r.u64()
		ev.FromFD = r.s32()
		ev.ToFD = r.s32()
		ev.MntID = r.s32()
		r.skip(4)
		ev.FromPath = r.str(pathLen)
		ev.ToPath = r.str(pathLen)
		ev.FromPath, ev.ToPath = tidyPath(ev.FromPath), tidyPath(ev.ToPath)
		paths = recordPaths{path1: "from_path", path2: "to_path"}
	case KindFsopen:
		ev.Flags = r.u64()
		ev.FSType = r.str(fstypeLen)
	case KindFsmount:
		ev.Flags = r.u64()
		ev.AttrFlags = r.u64()
		ev.FD = r.s32()
		ev.MntID = r.s32()
	case KindMountSetattr:
		ev.Flags = r.u64()
		ev.AttrSet = r.u64()
		ev.AttrClr = r.u64()
		ev.Propagation = r.u64()
		ev.DirFD = r.s32()
		r.skip(4)
		ev.Path = r.str(pathLen)
		ev.Path = tidyPath(ev.Path)
		paths = recordPaths{path1: "path"}
	}
	return paths
}

// decodeProcessRecord reads the body of an unshare, setns, newns_fork (a
// process created in a mount namespace other than its parent's) or exit
// record into ev. None of them has a path.
func decodeProcessRecord(r *cursor, ev *Event, kind Kind) {
	switch kind {
	case KindUnshare, KindSetns:
		ev.Flags = r.u64()
		ev.FD = r.s32()
		ev.MntNSBefore = r.u32()
		ev.MntNSAfter = r.u32()
		ev.TargetIno = r.u32()
		if kind == KindUnshare {
			ev.FD = 0 // the BPF side writes -1: unshare takes no fd
		}
	case KindNewNSFork:
		ev.ChildPID = r.u32()
		ev.ChildTID = r.u32()
		ev.ParentMntNS = r.u32()
		ev.ChildMntNS = r.u32()
	case KindExit:
		ev.ExitCode = r.s32()
	}
}

// decodeFailureRecord reads the body of a failure record (any other
// syscall that failed in a way that points at a mount) into ev.
func decodeFailureRecord(r *cursor, ev *Event) recordPaths {
	ev.FD = r.s32()
	ev.RDev = Dev(r.u32())
	ev.Dev = Dev(r.u32())
	n := int(r.u32())
	ev.Path = r.str(pathLen)
	ev.Cmdline = argv(r.bytes(cmdlineLen), n)
	ev.IoctlCmd = r.u32()
	if used := int(r.u32()); used > 0 {
		ev.Payload = append([]byte(nil), r.bytes(payloadLen)[:min(used, payloadLen)]...)
	}
	ev.Path = tidyPath(ev.Path)
	return recordPaths{path1: "path"}
}

// tidyPath drops the "." components and doubled slashes that joining a
// directory with a relative argument leaves ("/srv/./x//y" -> "/srv/x/y").
// ".." is kept: after a symlink it does not mean the lexical parent.
func tidyPath(p string) string {
	if !strings.HasPrefix(p, "/") || (!strings.Contains(p, "/.") && !strings.Contains(p, "//")) {
		return p
	}
	parts := strings.Split(p, "/")
	kept := parts[:0]
	for _, part := range parts {
		if part == "" || part == "." {
			continue
		}
		kept = append(kept, part)
	}
	return "/" + strings.Join(kept, "/")
}

// fillNames sets the fields derived from numbers: syscall, errno, flag names.
func (e *Event) fillNames() {
	if e.SyscallNr >= 0 {
		e.Syscall = SyscallName(e.SyscallNr)
	}
	if e.Ret < 0 && e.SyscallNr >= 0 {
		e.Errno = ErrnoName(-e.Ret)
	}
	e.FlagNames = FlagNames(e.Kind, e.Flags)
	if e.Kind == KindMountSetattr {
		e.PropagationName = PropagationName(e.Propagation)
	}
}

// cursor reads a record front to back. Decode checks the length of the
// fixed part first, so the reads of it cannot run past the end; a packed
// record's strings are each looked for within the rest.
type cursor struct {
	b      []byte
	off    int
	packed bool // strings are packed (each with its NUL), not in fixed fields
	// strs counts the strings read; unended is the first (from 1) whose
	// NUL was not within its field and the record, and unendedField its
	// field's size.
	strs, unended, unendedField int
}

func (c *cursor) u64() uint64 {
	v := binary.NativeEndian.Uint64(c.b[c.off:])
	c.off += 8
	return v
}

func (c *cursor) s64() int64 { return int64(c.u64()) }

func (c *cursor) u32() uint32 {
	v := binary.NativeEndian.Uint32(c.b[c.off:])
	c.off += 4
	return v
}

func (c *cursor) s32() int32 { return int32(c.u32()) }

func (c *cursor) skip(n int) { c.off += n }

func (c *cursor) bytes(n int) []byte {
	b := c.b[c.off : c.off+n]
	c.off += n
	return b
}

// argv joins the first n bytes of a NUL-separated argument area.
func argv(b []byte, n int) string {
	if n <= 0 {
		return ""
	}
	if n > len(b) {
		n = len(b)
	}
	return strings.TrimSpace(strings.ReplaceAll(string(bytes.TrimRight(b[:n], "\x00")), "\x00", " "))
}

// str reads a NUL-terminated string from a field of n bytes: the field
// itself, or in a packed record the string and its NUL, which must come
// within n bytes and the record.
func (c *cursor) str(n int) string {
	if c.packed {
		return c.packedStr(n)
	}
	field := c.b[c.off : c.off+n]
	c.off += n
	if i := bytes.IndexByte(field, 0); i >= 0 {
		field = field[:i]
	}
	return string(field)
}

// packedStr reads a packed string of a field of n bytes (its NUL
// included). A string without its NUL there is recorded in unended and
// reads as "", as does every string after it.
func (c *cursor) packedStr(n int) string {
	c.strs++
	rest := c.b[c.off:]
	if len(rest) > n {
		rest = rest[:n]
	}
	i := bytes.IndexByte(rest, 0)
	if i < 0 || c.unended > 0 {
		if c.unended == 0 {
			c.unended, c.unendedField = c.strs, n
		}
		c.off = len(c.b)
		return ""
	}
	c.off += i + 1
	return string(rest[:i])
}
