package correlate

import (
	"fmt"
	"testing"
)

// groupsOf lists the groups a table's mounts share or receive from, and
// the onward group of a slave that shares on; a private mount is in none.
func TestGroupsOfATable(t *testing.T) {
	g := groupsOf(table(t, 1, "1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n"+
		"2 1 0:5 / /tmp rw - tmpfs tmpfs rw\n"+
		"3 1 0:6 / /srv rw shared:3 master:2 - tmpfs tmpfs rw\n").Mounts)
	if got, want := fmt.Sprint(g.in, g.forward, g.shared), "map[1:1 2:1 3:1] map[{2 3}:1] 2"; got != want {
		t.Errorf("groups %s, want %s", got, want)
	}
}

// Root is the mount whose parent is not in the table, or is itself,
// wherever it is listed; RootPropagation names its propagation.
func TestRootAndItsPropagation(t *testing.T) {
	for _, c := range []struct {
		text string
		root int
		prop string
	}{
		{"2 1 0:5 / /tmp rw - tmpfs tmpfs rw\n1 0 254:0 / / rw shared:1 - ext4 /dev/vda rw\n", 1, "shared"},
		{"1 1 254:0 / / rw master:1 - ext4 /dev/vda rw\n2 1 0:5 / /tmp rw - tmpfs tmpfs rw\n", 1, "slave"},
		{"2 1 0:5 / /tmp rw shared:2 - tmpfs tmpfs rw\n1 1 254:0 / / rw - ext4 /dev/vda rw\n", 1, "private"},
	} {
		tb := table(t, 1, c.text)
		r := tb.Root()
		if r == nil || r.ID != c.root {
			t.Errorf("Root of %q = %+v, want mount %d", c.text, r, c.root)
		}
		if got := RootPropagation(tb); got != c.prop {
			t.Errorf("RootPropagation of %q = %q, want %q", c.text, got, c.prop)
		}
	}
	if got := RootPropagation(&Table{}); got != "" {
		t.Errorf("RootPropagation of an empty table = %q, want \"\"", got)
	}
}
