package stream

import (
	"strings"
	"testing"
)

// FuzzRead: a corrupt stream gives "name:line: reason", never a panic.
func FuzzRead(f *testing.F) {
	for _, s := range []string{
		`{"kind":"mount","time":"2026-11-21T12:00:00Z","pid":1,"syscall_nr":165,"target":"/x","rdev":"7:3"}`,
		`{"proc":{"op":"mountinfo","pid":1,"mounts":[{"ID":1,"Parent":0,"Major":254,"Minor":0,"Root":"/","Mountpoint":"/"}]}}`,
		`{"proc":{"op":"processes","processes":[{"pid":1,"comm":"x","mntns":4026531840}]}}`,
		"{\"kind\":", "garbage", "{}", `{"proc":null}`, "\n\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		err := Read(strings.NewReader(s), "f", func(Item) error { return nil })
		if err != nil && !strings.HasPrefix(err.Error(), "f:") {
			t.Fatalf("error without file:line: %v", err)
		}
	})
}
