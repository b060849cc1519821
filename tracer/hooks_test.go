package tracer

import (
	"errors"
	"strings"
	"testing"
)

// TestChooseHooks: auto takes the trampolines when the probe attaches, the
// tracepoint otherwise; a forced tracepoint never probes; a forced
// trampoline on a kernel without them is one clear error.
func TestChooseHooks(t *testing.T) {
	refused := errors.New("the kernel refuses to load an fexit program on __x64_sys_mount: operation not permitted")
	cases := []struct {
		want    Hooks
		probe   error
		got     Hooks
		why     string
		wantErr string
	}{
		{HooksAuto, nil, HooksTrampoline, "the kernel attaches fexit programs to its syscall functions", ""},
		{HooksAuto, refused, HooksTracepoint, "no BPF trampolines: " + refused.Error(), ""},
		{HooksTrampoline, nil, HooksTrampoline, "forced by --hooks=trampoline (the kernel has BPF trampolines)", ""},
		{HooksTrampoline, refused, HooksTrampoline, "", "--hooks=trampoline: this kernel cannot attach an fexit program to " + syscallFunc("mount") +
			" (no BPF trampolines; use --hooks=auto or tracepoint): " + refused.Error()},
		{HooksTracepoint, nil, HooksTracepoint, "forced by --hooks=tracepoint", ""},
		{HooksTracepoint, refused, HooksTracepoint, "forced by --hooks=tracepoint", ""},
	}
	for _, c := range cases {
		probed := false
		got, why, err := chooseHooks(c.want, func() error { probed = true; return c.probe })
		name := c.want.String() + "/probe=" + errString(c.probe)
		if c.wantErr != "" {
			if err == nil || err.Error() != c.wantErr || !errors.Is(err, refused) {
				t.Errorf("%s: error %v, want %q", name, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.got || why != c.why {
			t.Errorf("%s: %v %q %v, want %v %q", name, got, why, err, c.got, c.why)
		}
		if probed != (c.want != HooksTracepoint) {
			t.Errorf("%s: probed %v", name, probed)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return "refused"
}

// TestParseHooks: the flag's three words round-trip; anything else is
// refused with the words it wants.
func TestParseHooks(t *testing.T) {
	for _, h := range []Hooks{HooksAuto, HooksTracepoint, HooksTrampoline} {
		got, err := ParseHooks(h.String())
		if err != nil || got != h {
			t.Errorf("ParseHooks(%q) = %v, %v", h, got, err)
		}
	}
	if _, err := ParseHooks("fentry"); err == nil || !strings.Contains(err.Error(), "want auto, tracepoint or trampoline") {
		t.Errorf("ParseHooks(fentry): %v", err)
	}
}
