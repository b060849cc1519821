package event

import (
	"strconv"
	"strings"
	"time"
)

// TextTimeLayout is the timestamp layout of the one-line text form.
const TextTimeLayout = "15:04:05.000000"

// Text renders the event as one human-readable line, strace-like:
//
//	12:01:02.114000 mount runc[3970/3971] mnt:[4026531840] mount("/", "/rootfs", MS_BIND|MS_REC) = 0
func (e *Event) Text() string {
	var b strings.Builder
	b.WriteString(e.Time.Local().Format(TextTimeLayout))
	b.WriteByte(' ')
	b.WriteString(e.Comm)
	b.WriteByte('[')
	b.WriteString(strconv.FormatUint(uint64(e.PID), 10))
	if e.TID != e.PID {
		b.WriteByte('/')
		b.WriteString(strconv.FormatUint(uint64(e.TID), 10))
	}
	b.WriteString("] mnt:[")
	b.WriteString(strconv.FormatUint(uint64(e.MntNS), 10))
	b.WriteString("] ")
	b.WriteString(e.Kind.String())
	b.WriteByte(' ')
	e.writeDetails(&b)
	if e.SyscallNr >= 0 {
		b.WriteString(" = ")
		if e.Ret < 0 {
			b.WriteString("-1 ")
			b.WriteString(e.Errno)
		} else {
			b.WriteString(strconv.FormatInt(e.Ret, 10))
		}
	}
	if len(e.Truncated) > 0 {
		b.WriteString(" (truncated: ")
		b.WriteString(strings.Join(e.Truncated, ","))
		b.WriteByte(')')
	}
	return b.String()
}

func (e *Event) writeDetails(b *strings.Builder) {
	kv := func(k, v string) {
		if v == "" {
			return
		}
		b.WriteByte(' ')
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(v)
	}
	num := func(v int64) string { return strconv.FormatInt(v, 10) }
	ns := func(v uint32) string { return "mnt:[" + strconv.FormatUint(uint64(v), 10) + "]" }

	switch e.Kind {
	case KindMount:
		b.WriteString(strconv.Quote(e.Source) + " -> " + strconv.Quote(e.Target))
		kv("fstype", e.FSType)
		kv("flags", e.FlagNames)
		if e.Data != "" {
			kv("data", strconv.Quote(e.Data))
		}
	case KindUmount:
		b.WriteString(strconv.Quote(e.Target))
		kv("flags", e.FlagNames)
	case KindUnshare:
		b.WriteString(e.FlagNames + " " + ns(e.MntNSBefore) + " -> " + ns(e.MntNSAfter))
	case KindSetns:
		b.WriteString("fd=" + num(int64(e.FD)))
		kv("nstype", e.FlagNames)
		kv("target_ino", num(int64(e.TargetIno)))
		b.WriteString(" " + ns(e.MntNSBefore) + " -> " + ns(e.MntNSAfter))
	case KindNewNSFork:
		b.WriteString("child=" + num(int64(e.ChildPID)) + " " + ns(e.ParentMntNS) + " -> " + ns(e.ChildMntNS))
	case KindExit:
		b.WriteString("exit_code=" + num(int64(e.ExitCode)))
	case KindPivotRoot:
		b.WriteString("new_root=" + strconv.Quote(e.NewRoot) + " put_old=" + strconv.Quote(e.PutOld))
	case KindOpenTree:
		b.WriteString(strconv.Quote(e.Path))
		kv("flags", e.FlagNames)
		kv("mnt_id", nonZero(e.MntID))
	case KindMoveMount:
		b.WriteString(strconv.Quote(e.FromPath) + " -> " + strconv.Quote(e.ToPath))
		kv("flags", e.FlagNames)
		kv("mnt_id", nonZero(e.MntID))
	case KindFsopen:
		b.WriteString(strconv.Quote(e.FSType))
		kv("flags", e.FlagNames)
	case KindFsmount:
		b.WriteString("fs_fd=" + num(int64(e.FD)))
		kv("flags", e.FlagNames)
		kv("attr_flags", hexNonZero(e.AttrFlags))
		kv("mnt_id", nonZero(e.MntID))
	case KindMountSetattr:
		b.WriteString(strconv.Quote(e.Path))
		kv("flags", e.FlagNames)
		kv("attr_set", hexNonZero(e.AttrSet))
		kv("attr_clr", hexNonZero(e.AttrClr))
		kv("propagation", e.PropagationName)
	case KindFailure:
		b.WriteString(e.Syscall)
		if e.Path != "" {
			b.WriteString(" " + strconv.Quote(e.Path))
		}
		if e.FD >= 0 {
			kv("fd", num(int64(e.FD)))
		}
		if e.RDev != 0 {
			kv("rdev", e.RDev.String())
		}
	case KindLost:
		kv("events", strconv.FormatUint(e.Lost, 10))
		if !e.LostSince.IsZero() {
			kv("since", e.LostSince.UTC().Format("15:04:05.000"))
		}
	}
}

func nonZero(v int32) string {
	if v == 0 {
		return ""
	}
	return strconv.FormatInt(int64(v), 10)
}

func hexNonZero(v uint64) string {
	if v == 0 {
		return ""
	}
	return "0x" + strconv.FormatUint(v, 16)
}

// WallClock maps CLOCK_MONOTONIC nanoseconds to wall-clock time, given the
// offset wall - monotonic measured once at start.
type WallClock struct {
	OffsetNS int64
}

// Time returns the wall-clock time of a monotonic timestamp.
func (c WallClock) Time(monoNS uint64) time.Time {
	return time.Unix(0, int64(monoNS)+c.OffsetNS)
}
