package tracer_test

import (
	"slices"
	"strings"
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/mntleak/mntleak/tracer"
)

// TestJudgeCapabilities: what each effective set gives, without root.
func TestJudgeCapabilities(t *testing.T) {
	const (
		dacReadSearch = 1 << 2
		sysChroot     = 1 << 18
		sysPtrace     = 1 << 19
		sysAdmin      = 1 << 21
		perfmon       = 1 << 38
		bpf           = 1 << 39
		all           = dacReadSearch | sysChroot | sysPtrace | sysAdmin | perfmon | bpf
	)
	tests := []struct {
		name      string
		caps      uint64
		wantErr   string
		wantWarns []string // capabilities named in each warning, in order
	}{
		{name: "the daemon's six", caps: all},
		{name: "root", caps: 0x000001ffffffffff},
		{name: "sys_admin without bpf and perfmon (before 5.8)", caps: sysAdmin | sysChroot | sysPtrace | dacReadSearch},
		{name: "bpf and perfmon without sys_admin", caps: bpf | perfmon | sysChroot | sysPtrace | dacReadSearch, wantWarns: []string{"CAP_SYS_ADMIN"}},
		{name: "none", caps: 0, wantErr: "missing capabilities CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)"},
		{name: "bpf only", caps: bpf | sysPtrace | dacReadSearch, wantErr: "missing capabilities CAP_PERFMON (or CAP_SYS_ADMIN)"},
		{name: "perfmon only", caps: perfmon, wantErr: "missing capabilities CAP_BPF (or CAP_SYS_ADMIN)"},
		{name: "no ptrace", caps: all &^ sysPtrace, wantWarns: []string{"CAP_SYS_PTRACE"}},
		{name: "neither ptrace nor dac_read_search", caps: bpf | perfmon | sysAdmin | sysChroot, wantWarns: []string{"CAP_SYS_PTRACE,CAP_DAC_READ_SEARCH"}},
		{name: "no sys_chroot (the five of 0.1.0)", caps: all &^ sysChroot, wantWarns: []string{"CAP_SYS_CHROOT"}},
		{name: "only the BPF ones", caps: bpf | perfmon, wantWarns: []string{"CAP_SYS_PTRACE,CAP_DAC_READ_SEARCH", "CAP_SYS_ADMIN,CAP_SYS_CHROOT"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zap.WarnLevel)
			err := tracer.JudgeCapabilities(tt.caps, "x", zap.New(core))
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			}
			var warned []string
			for _, e := range logs.All() {
				var caps []string
				for _, c := range e.ContextMap()["capabilities"].([]any) {
					caps = append(caps, c.(string))
				}
				warned = append(warned, strings.Join(caps, ","))
				kept := slices.Contains(caps, "CAP_SYS_CHROOT") || slices.Contains(caps, "CAP_SYS_ADMIN")
				if kept != strings.Contains(e.Message, "mount namespaces no process runs in") {
					t.Errorf("warning %q names %v", e.Message, caps)
				}
			}
			if !slices.Equal(warned, tt.wantWarns) {
				t.Errorf("warnings naming %q, want %q", warned, tt.wantWarns)
			}
		})
	}
}
