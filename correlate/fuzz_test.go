package correlate

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/mntleak/mntleak/event"
	"github.com/mntleak/mntleak/finding"
)

// FuzzMountinfo: whatever a mountinfo line says (octal escapes, //deleted,
// propagation tags, overlay options), the parsers and the holder search
// built on it do not panic.
func FuzzMountinfo(f *testing.F) {
	f.Add(node, "/run/netns/cni-x")
	f.Add("1 0 254:0 /a\\040b//deleted /x\\011y rw shared:1 master:2 unbindable - ext4 /dev/vda rw\n", "/x\ty")
	f.Add("2 1 0:77 / /m rw - overlay overlay rw,lowerdir=/l1:/l2,upperdir=/u,workdir=/w\n", "/u")
	f.Add("3 3 0:4 net:[1] / rw - nsfs nsfs rw\n", "/")
	f.Add("", "")
	f.Fuzz(func(t *testing.T, text, path string) {
		mounts, err := mountsOf(text)
		if err != nil {
			return
		}
		tb := NewTable(1, mounts, time.Time{}, 0)
		for _, m := range mounts {
			_ = Propagation(m)
			_ = PrivateTmpUnit(m.Root)
			_ = ContainerID(m.Mountpoint)
			_ = overlayUses(m.VFSOptions, path)
			_ = tb.Parent(m)
		}
		_ = tb.Root()
		_ = tb.Containing(path)
		_ = RootPropagation(tb)
		_ = translate(path, tb, tb)
		for _, id := range []identity{{path: path, layers: true}, {dev: event.MakeDev(0, 4), root: "net:[1]", path: path}, {dev: event.MakeDev(7, 0), block: true}} {
			_ = outermost(tb, findIn(tb, id, tb))
		}
	})
}

// FuzzFindingLine: whatever bytes a path, a mount source or a command name
// holds (a directory named with a newline, JSON and an ESC; a binary named
// "hold\nFAKE"), a finding's log line is exactly one line with no control
// character, why's report has one line per line it means to write, and
// the JSON keeps valid UTF-8 as it is and round-trips to the same bytes
// (invalid UTF-8 cannot be a JSON string: it becomes U+FFFD there).
func FuzzFindingLine(f *testing.F) {
	f.Add("/srv/vol", "node_exporter", "/dev/loop0")
	f.Add("ev il\n{\"level\":\"error\",\"msg\":\"FAKE\"}\x1b[31m", "hold\nFAKE", "\x1b]0;owned\a")
	f.Add("bad\xff\xfe", "\u202eexe", `C:\x`)
	f.Fuzz(func(t *testing.T, path, comm, source string) {
		ref := finding.ProcRef{PID: 42, Comm: comm, Unit: comm + ".service"}
		fd := &finding.Finding{
			Kind: finding.KindFailure, Cause: finding.CauseRprivateBind,
			Call:   finding.Call{PID: 7, Comm: comm, Syscall: "umount2", Errno: "EBUSY", MntNS: 1},
			Object: finding.Object{Path: path, Source: source, FSType: "ext4"},
			Holders: []finding.Holder{{MntNS: 2, Where: path + "/x", Also: []string{source}, Processes: []finding.ProcRef{ref},
				Pins: []finding.PinRef{{ProcRef: ref, MntNS: 2, Pin: "cwd", Path: path}}}},
			Summary: "leaked by rbind " + source + " → " + path + " by " + comm,
			Fix:     "mountPropagation: HostToContainer for the " + path + " volume",
			Missing: []string{comm},
		}
		line := fd.Line()
		for _, r := range line {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("control character %U in the line %q", r, line)
			}
		}
		// The short form: a headline within its limit, and no control
		// character in it or its detail lines.
		if head := fd.Headline(); utf8.RuneCountInString(head) > finding.HeadlineLimit {
			t.Fatalf("headline of %d characters: %q", utf8.RuneCountInString(head), head)
		}
		for _, r := range fd.Block() {
			if (r < 0x20 && r != '\n') || r == 0x7f || (r >= 0x80 && r < 0xa0) {
				t.Fatalf("control character %U in the short form %q", r, fd.Block())
			}
		}
		report := fd.Report()
		if n := strings.Count(report, "\n"); n != 6 {
			t.Fatalf("report has %d lines, want 6 (headline, namespace, holder, pinner, cause, fix):\n%s", n, report)
		}
		b, err := json.Marshal(fd)
		if err != nil {
			t.Fatal(err)
		}
		var back finding.Finding
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("JSON does not read back: %v", err)
		}
		if !utf8.ValidString(path) || !utf8.ValidString(comm) || !utf8.ValidString(source) {
			return // JSON strings are Unicode: invalid bytes become U+FFFD (the journal's fields keep them)
		}
		if back.Object.Path != path || back.Call.Comm != comm || back.Object.Source != source {
			t.Fatalf("JSON changed the strings: %q %q %q", back.Object.Path, back.Call.Comm, back.Object.Source)
		}
		again, err := json.Marshal(&back)
		if err != nil || !bytes.Equal(again, b) {
			t.Fatalf("JSON does not round-trip:\n%s\n%s", b, again)
		}
	})
}
