package finding

import (
	"strconv"
	"strings"
	"unicode/utf8"
)

// Escape makes a human-readable line safe to print: paths, mount sources
// and command names are chosen by whoever makes the mount or names the
// binary, so a newline would forge a log line and an ESC would recolour
// the engineer's terminal. Every rune strconv.IsPrint rejects (control
// characters, escapes, bidi overrides), every byte that is not UTF-8, and
// the backslash itself are written as Go escapes (\n, \x1b, \u202e, \\),
// so the result is one line and can be read back unambiguously; a line
// without any of them, every ordinary path, is returned as it is.
// Structured fields (JSON, journald MNTLEAK_*) keep the raw bytes.
func Escape(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			b.WriteString(`\x`)
			b.WriteString(strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r == '\\':
			b.WriteString(`\\`)
		case r == ' ' || strconv.IsPrint(r):
			b.WriteString(s[i : i+size])
		default:
			q := strconv.QuoteRune(r) // '\n', '\x1b', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	return b.String()
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c == 0x7f || c == '\\' || c >= 0x80 {
			return needsEscapeSlow(s)
		}
	}
	return false
}

// needsEscapeSlow looks at the runes of a line that has a byte of note.
func needsEscapeSlow(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if (r == utf8.RuneError && size <= 1) || r == '\\' || (r != ' ' && !strconv.IsPrint(r)) {
			return true
		}
		i += size
	}
	return false
}
