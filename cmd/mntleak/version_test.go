package main

import (
	"bytes"
	"strings"
	"testing"

	"github.com/mntleak/mntleak/tracer"
)

// TestWriteFeaturesPathWalk: version names the path walk the programs
// would use, whatever the probe found.
func TestWriteFeaturesPathWalk(t *testing.T) {
	tests := []struct {
		walk string
		want string
	}{
		{"bpf_loop", "path walk:   bpf_loop\n"},
		{"bounded loop (the kernel has no bpf_loop)", "path walk:   bounded loop (the kernel has no bpf_loop)\n"},
		{"unknown (probing needs CAP_BPF; tracing would use the bounded loop)", "path walk:   unknown (probing needs CAP_BPF; tracing would use the bounded loop)\n"},
	}
	for _, tt := range tests {
		t.Run(tt.walk, func(t *testing.T) {
			var out bytes.Buffer
			writeFeatures(&out, tracer.Features{Kernel: "5.10.0", BTF: true, RingBuffer: "yes", Buffer: "ringbuf", PathWalk: tt.walk})
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("output lacks %q:\n%s", tt.want, out.String())
			}
		})
	}
}

// TestVersionPathWalk: the real probe on this kernel (5.17 or later, as
// root: bpf_loop; without CAP_BPF: unknown) is in both outputs.
func TestVersionPathWalk(t *testing.T) {
	var stdout bytes.Buffer
	if code := run([]string{"version"}, &stdout, &bytes.Buffer{}); code != exitOK {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(stdout.String(), "\npath walk:   ") {
		t.Errorf("version output lacks the path walk:\n%s", stdout.String())
	}
	stdout.Reset()
	if code := run([]string{"version", "--json"}, &stdout, &bytes.Buffer{}); code != exitOK || !strings.Contains(stdout.String(), `"path_walk": "`) {
		t.Errorf("version --json: %d %s", code, stdout.String())
	}
}
