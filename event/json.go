package event

import (
	"encoding/base64"
	"strconv"
	"time"
	"unicode/utf8"
)

// AppendJSON appends ev as encoding/json writes it with HTML escaping off
// (json.Encoder.SetEscapeHTML(false)), byte for byte, without the
// newline: the fields in Event's order, omitempty ones left out when zero.
// It reports false, having appended nothing, for an event encoding/json
// refuses (a kind out of range, a year outside 0..9999): the caller asks
// encoding/json for its error. The event stream writes every event this
// way; encoding/json's reflection was a fifth of the daemon's CPU in a
// mount storm (TestAppendJSONIsEncodingJSON holds the two together).
func (e *Event) AppendJSON(b []byte) ([]byte, bool) {
	n0 := len(b)
	if !e.Kind.Valid() {
		return b, false
	}
	b = append(b, `{"kind":`...)
	b = appendJSONString(b, e.Kind.String())
	b = append(b, `,"time":`...)
	b, ok := appendJSONTime(b, e.Time)
	if !ok {
		return b[:n0], false
	}
	b = append(b, `,"mono_ns":`...)
	b = strconv.AppendUint(b, e.MonoNS, 10)
	b = appendUintField(b, `,"pid":`, uint64(e.PID))
	b = appendUintField(b, `,"tid":`, uint64(e.TID))
	b = appendUintField(b, `,"ppid":`, uint64(e.PPID))
	b = appendUintField(b, `,"uid":`, uint64(e.UID))
	b = append(b, `,"comm":`...)
	b = appendJSONString(b, e.Comm)
	b = appendUintField(b, `,"mntns":`, uint64(e.MntNS))
	b = appendUintField(b, `,"cgroup_id":`, e.CgroupID)
	b = append(b, `,"syscall_nr":`...)
	b = strconv.AppendInt(b, int64(e.SyscallNr), 10)
	b = appendStringOmit(b, `,"syscall":`, e.Syscall)
	b = append(b, `,"ret":`...)
	b = strconv.AppendInt(b, e.Ret, 10)
	b = appendStringOmit(b, `,"errno":`, e.Errno)
	if len(e.Truncated) > 0 {
		b = append(b, `,"truncated":[`...)
		for i, s := range e.Truncated {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, s)
		}
		b = append(b, ']')
	}
	b = appendStringOmit(b, `,"exe":`, e.Exe)
	b = appendStringOmit(b, `,"cmdline":`, e.Cmdline)
	b = appendStringOmit(b, `,"cgroup":`, e.Cgroup)
	b = appendUintOmit(b, `,"flags":`, e.Flags)
	b = appendStringOmit(b, `,"flag_names":`, e.FlagNames)
	b = appendStringOmit(b, `,"fstype":`, e.FSType)
	b = appendStringOmit(b, `,"source":`, e.Source)
	b = appendStringOmit(b, `,"target":`, e.Target)
	b = appendStringOmit(b, `,"data":`, e.Data)
	b = appendStringOmit(b, `,"path":`, e.Path)
	b = appendStringOmit(b, `,"from_path":`, e.FromPath)
	b = appendStringOmit(b, `,"to_path":`, e.ToPath)
	b = appendStringOmit(b, `,"new_root":`, e.NewRoot)
	b = appendStringOmit(b, `,"put_old":`, e.PutOld)
	if b, ok = e.appendJSONTail(b); !ok {
		return b[:n0], false
	}
	return b, true
}

// appendJSONTail appends the fields after put_old, and the closing brace;
// false for a lost_since time.Time.MarshalJSON refuses.
func (e *Event) appendJSONTail(b []byte) ([]byte, bool) {
	b = appendIntOmit(b, `,"fd":`, int64(e.FD))
	b = appendIntOmit(b, `,"dirfd":`, int64(e.DirFD))
	b = appendIntOmit(b, `,"from_fd":`, int64(e.FromFD))
	b = appendIntOmit(b, `,"to_fd":`, int64(e.ToFD))
	b = appendIntOmit(b, `,"mnt_id":`, int64(e.MntID))
	b = appendIntOmit(b, `,"cwd_mnt_id":`, int64(e.CwdMntID))
	b = appendIntOmit(b, `,"root_mnt_id":`, int64(e.RootMntID))
	b = appendUintOmit(b, `,"mntns_before":`, uint64(e.MntNSBefore))
	b = appendUintOmit(b, `,"mntns_after":`, uint64(e.MntNSAfter))
	b = appendUintOmit(b, `,"target_ino":`, uint64(e.TargetIno))
	b = appendUintOmit(b, `,"child_pid":`, uint64(e.ChildPID))
	b = appendUintOmit(b, `,"child_tid":`, uint64(e.ChildTID))
	b = appendUintOmit(b, `,"parent_mntns":`, uint64(e.ParentMntNS))
	b = appendUintOmit(b, `,"child_mntns":`, uint64(e.ChildMntNS))
	b = appendUintOmit(b, `,"new_mntns_id":`, e.NewMntNSID)
	b = appendIntOmit(b, `,"exit_code":`, int64(e.ExitCode))
	b = appendUintOmit(b, `,"attr_flags":`, e.AttrFlags)
	b = appendUintOmit(b, `,"attr_set":`, e.AttrSet)
	b = appendUintOmit(b, `,"attr_clr":`, e.AttrClr)
	b = appendUintOmit(b, `,"propagation":`, e.Propagation)
	b = appendStringOmit(b, `,"propagation_name":`, e.PropagationName)
	b = appendDevOmit(b, `,"rdev":`, e.RDev)
	b = appendDevOmit(b, `,"dev":`, e.Dev)
	b = appendUintOmit(b, `,"ioctl_cmd":`, uint64(e.IoctlCmd))
	if len(e.Payload) > 0 {
		b = append(b, `,"payload":"`...)
		b = base64.StdEncoding.AppendEncode(b, e.Payload)
		b = append(b, '"')
	}
	if td := e.Teardown; td != nil {
		b = append(b, `,"teardown":{"op":`...)
		b = appendJSONString(b, td.Op)
		b = append(b, `,"device":`...)
		b = appendJSONString(b, td.Device)
		b = append(b, `,"dev":`...)
		b = appendDev(b, td.Dev)
		b = append(b, '}')
	}
	b = appendUintOmit(b, `,"lost":`, e.Lost)
	if !e.LostSince.IsZero() {
		var ok bool
		if b, ok = appendJSONTime(append(b, `,"lost_since":`...), e.LostSince); !ok {
			return b, false
		}
	}
	return append(b, '}'), true
}

// appendJSONTime appends t as time.Time.MarshalJSON writes it (RFC 3339
// with nanoseconds, quoted), or reports false where that refuses it: a
// year not of four digits, a zone offset of 24 hours or more.
func appendJSONTime(b []byte, t time.Time) ([]byte, bool) {
	n0 := len(b) + 1
	b = t.AppendFormat(append(b, '"'), time.RFC3339Nano)
	if b[n0+len("9999")] != '-' {
		return b, false
	}
	if b[len(b)-1] != 'Z' {
		sign, hh := b[len(b)-len("Z07:00")], b[len(b)-len("07:00"):]
		if ('0' <= sign && sign <= '9') || 10*(hh[0]-'0')+(hh[1]-'0') >= 24 {
			return b, false
		}
	}
	return append(b, '"'), true
}

func appendUintField(b []byte, key string, v uint64) []byte {
	return strconv.AppendUint(append(b, key...), v, 10)
}

func appendUintOmit(b []byte, key string, v uint64) []byte {
	if v == 0 {
		return b
	}
	return appendUintField(b, key, v)
}

func appendIntOmit(b []byte, key string, v int64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendInt(append(b, key...), v, 10)
}

func appendStringOmit(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

// appendDevOmit appends a Dev the way its MarshalText reads, left out
// when 0 (omitempty looks at the number).
func appendDevOmit(b []byte, key string, d Dev) []byte {
	if d == 0 {
		return b
	}
	return appendDev(append(b, key...), d)
}

func appendDev(b []byte, d Dev) []byte {
	b = append(b, '"')
	b = strconv.AppendUint(b, uint64(d.Major()), 10)
	b = append(b, ':')
	b = strconv.AppendUint(b, uint64(d.Minor()), 10)
	return append(b, '"')
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s quoted as encoding/json quotes a string with
// HTML escaping off: '"' and '\\' escaped, control characters as \b, \f,
// \n, \r, \t or \u00XX, each invalid UTF-8 byte as \ufffd, and U+2028 and
// U+2029 escaped (JavaScript takes them as line ends).
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
