package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// TestBadFlagValuesExit2: a bad list entry is one line naming it and
// exit 2, before anything is measured.
func TestBadFlagValuesExit2(t *testing.T) {
	for _, tt := range []struct{ args, want string }{
		{"-storm-premounts 0", `invalid -storm-premounts entry "0"`},
		{"-storm-premounts 3000,50001", `invalid -storm-premounts entry "50001"`},
		{"-storm-premounts many", `invalid -storm-premounts entry "many"`},
		{"-storm-ringbuf-sizes 4095", `invalid -storm-ringbuf-sizes entry "4095"`},
		{"-storm-ringbuf-sizes 65536,12288", `invalid -storm-ringbuf-sizes entry "12288"`},
		{"-skip null,nothing", `invalid -skip entry "nothing"`},
	} {
		// A binary that is not there: were an entry taken, nothing runs.
		code, stderr := runWith(t, append(strings.Fields(tt.args), "-mntleak", "/nonexistent/mntleak"))
		if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.HasPrefix(stderr, "mntleak-bench: "+tt.want+": want ") {
			t.Errorf("%s: exit %d, %q; want 2 and one line: %s", tt.args, code, stderr, tt.want)
		}
	}
}

// runWith runs the command line with args and returns its exit code and
// what it wrote to stderr.
func runWith(t *testing.T, args []string) (int, string) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	oldArgs, oldStderr := os.Args, os.Stderr
	os.Args, os.Stderr = append([]string{"mntleak-bench"}, args...), w
	code := run()
	os.Args, os.Stderr = oldArgs, oldStderr
	w.Close()
	b, err := io.ReadAll(r)
	if err != nil {
		t.Fatal(err)
	}
	return code, string(b)
}
