package tracer_test

import (
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
		sysPtrace     = 1 << 19
		sysAdmin      = 1 << 21
		perfmon       = 1 << 38
		bpf           = 1 << 39
		all           = dacReadSearch | sysPtrace | sysAdmin | perfmon | bpf
	)
	tests := []struct {
		name     string
		caps     uint64
		wantErr  string
		wantWarn string // capabilities named in the one warning
	}{
		{name: "the daemon's five", caps: all},
		{name: "root", caps: 0x000001ffffffffff},
		{name: "sys_admin without bpf and perfmon (before 5.8)", caps: sysAdmin | sysPtrace | dacReadSearch},
		{name: "bpf and perfmon without sys_admin", caps: bpf | perfmon | sysPtrace | dacReadSearch},
		{name: "none", caps: 0, wantErr: "missing capabilities CAP_BPF and CAP_PERFMON (or CAP_SYS_ADMIN)"},
		{name: "bpf only", caps: bpf | sysPtrace | dacReadSearch, wantErr: "missing capabilities CAP_PERFMON (or CAP_SYS_ADMIN)"},
		{name: "perfmon only", caps: perfmon, wantErr: "missing capabilities CAP_BPF (or CAP_SYS_ADMIN)"},
		{name: "no ptrace", caps: all &^ sysPtrace, wantWarn: "CAP_SYS_PTRACE"},
		{name: "neither ptrace nor dac_read_search", caps: bpf | perfmon | sysAdmin, wantWarn: "CAP_SYS_PTRACE,CAP_DAC_READ_SEARCH"},
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
				for _, c := range e.ContextMap()["capabilities"].([]any) {
					warned = append(warned, c.(string))
				}
			}
			if got := strings.Join(warned, ","); got != tt.wantWarn || logs.Len() > 1 {
				t.Errorf("%d warnings naming %q, want %q", logs.Len(), got, tt.wantWarn)
			}
		})
	}
}
