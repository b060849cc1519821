package stream

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/event"
)

func TestReadItems(t *testing.T) {
	in := `{"kind":"mount","time":"2026-11-21T12:00:00Z","pid":1,"comm":"mount","syscall_nr":165,"ret":0,"target":"/x"}

{"proc":{"op":"hostns","mntns":4026531840}}
{"attribution":{"op":"container","key":"c1","container":{"id":"c1","name":"web","image":"busybox"}}}
{"mount_note":{"time":"2026-11-21T12:00:01Z","mntns":80,"detach":true,"pid":400,"mount":{"ID":111,"Parent":110,"Major":7,"Minor":0,"Mountpoint":"/srv/vol"}}}
{"mount_note":{"time":"2026-11-21T12:00:02Z","mntns":80,"detach":false,"pid":0,"watch":"off"}}
`
	var items []Item
	if err := Read(strings.NewReader(in), "s", func(it Item) error { items = append(items, it); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(items) != 5 || items[4].Note == nil || items[4].Note.Watch != event.WatchOff || items[4].Note.Mount != nil {
		t.Errorf("the watch note: %+v", items)
	}
	if len(items) < 4 || items[3].Note == nil || !items[3].Note.Detach || items[3].Note.NS != 80 || items[3].Note.Mount.ID != 111 ||
		items[3].Note.Mount.Mountpoint != "/srv/vol" || items[3].Event != nil || items[3].Proc != nil {
		t.Errorf("the mount note: %+v", items)
	}
	if len(items) < 3 || items[0].Event == nil || items[0].Event.Target != "/x" || items[0].Line != 1 ||
		items[1].Proc == nil || items[1].Proc.MntNS != 4026531840 || items[1].Line != 3 ||
		items[2].Attribution == nil || items[2].Attribution.Container.Name != "web" || items[2].Proc != nil {
		t.Errorf("items %+v", items)
	}
}

func TestReadErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"[1,2]", "s:1: not a JSON object"},
		{`{"kind":` + "\n", "s:1: invalid JSON"},
		{`{"kind":` + "\n{}\n", "s:1: invalid JSON"},
		{`{"proc":{"op":"mountinfo","pid":"x"}}`, "s:1: invalid proc record"},
		{`{"proc":{"op":"mountinfo","surprise":1}}`, "s:1: invalid proc record"},
		{`{"proc":null}`, "s:1: empty proc record"},
		{`{"attribution":{"op":"guess"}}`, "s:1: attribution record without a known op"},
		{`{"attribution":null}`, "s:1: attribution record without a known op"},
		{`{"attribution":{"op":"pod","surprise":1}}`, "s:1: invalid attribution record"},
		{`{"kind":"mount","mono_ns":"soon"}`, "s:1: invalid event"},
		{`{"mount_note":{"mntns":80,"surprise":1,"mount":{"ID":1}}}`, "s:1: invalid mount note"},
		{`{"mount_note":{"mntns":80}}`, "s:1: mount note without a mount"},
		{`{"mount_note":null}`, "s:1: mount note without a mount"},
		{`{"mount_note":{"mntns":80,"watch":"on","mount":{"ID":1}}}`, "s:1: mount note with both a mount and a watch"},
		{`{"mount_note":{"mntns":80,"watch":"maybe"}}`, `s:1: mount note: watch "maybe", want "on" or "off"`},
		{"{}", `s:1: neither an event`},
		{strings.Repeat(" ", MaxLine+1), "longer than"},
	}
	for _, tt := range tests {
		err := Read(strings.NewReader(tt.in), "s", func(Item) error { return nil })
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Read(%.40q) = %v, want %q", tt.in, err, tt.want)
		}
	}
	stop := errors.New("stop here")
	err := Read(strings.NewReader(`{"proc":{"op":"hostns"}}`), "s", func(Item) error { return stop })
	if !errors.Is(err, stop) || !strings.HasPrefix(err.Error(), "s:1: ") {
		t.Errorf("callback error %v", err)
	}
}

// TestReadTruncated: a last line that is cut short (not whole JSON, no
// newline) is a *TruncatedError naming its line, after every line before
// it was read; the same line ending in a newline, or one that is whole
// JSON, is an ordinary error.
func TestReadTruncated(t *testing.T) {
	good := `{"proc":{"op":"hostns","mntns":1}}` + "\n"
	tests := []struct {
		in        string
		truncated bool
		items     int
	}{
		{good + good + `{"kind":"mou`, true, 2},
		{good + `{"proc":{"op":"hostns","mntns":1}`, true, 1},
		{good + `{"kind":"mou` + "\n", false, 1},
		{good + `{}`, false, 1},
	}
	for _, tt := range tests {
		items := 0
		err := Read(strings.NewReader(tt.in), "s", func(Item) error { items++; return nil })
		var trunc *TruncatedError
		if errors.As(err, &trunc) != tt.truncated {
			t.Errorf("Read(%q) = %v, want truncated %v", tt.in, err, tt.truncated)
			continue
		}
		if tt.truncated && (trunc.Line != tt.items+1 || !strings.HasPrefix(err.Error(), fmt.Sprintf("s:%d: last line truncated", tt.items+1))) {
			t.Errorf("Read(%q) = %v: want line %d", tt.in, err, tt.items+1)
		}
		if items != tt.items {
			t.Errorf("Read(%q) read %d items before the error, want %d", tt.in, items, tt.items)
		}
	}
}
