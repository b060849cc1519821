package daemon

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// TestIsDevNull: events are not encoded for /dev/null, and only for it.
func TestIsDevNull(t *testing.T) {
	null, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	file, err := os.Create(filepath.Join(t.TempDir(), "events"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	zero, err := os.OpenFile("/dev/zero", os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer zero.Close()
	for _, tt := range []struct {
		name string
		w    io.Writer
		want bool
	}{{"/dev/null", null, true}, {"a file", file, false}, {"/dev/zero", zero, false}, {"a buffer", &bytes.Buffer{}, false}} {
		if got := isDevNull(tt.w); got != tt.want {
			t.Errorf("isDevNull(%s) = %v, want %v", tt.name, got, tt.want)
		}
	}
}
