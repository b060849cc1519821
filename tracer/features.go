package tracer

import (
	"os"
	"strings"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/features"
	"golang.org/x/sys/unix"
)

// Features is what the running kernel offers mntleak.
type Features struct {
	Kernel      string            `json:"kernel"`
	BTF         bool              `json:"btf"`
	RingBuffer  string            `json:"ring_buffer"` // yes, no, or why it is unknown
	Tracefs     string            `json:"tracefs"`     // where, or "not mounted"
	Tracepoints map[string]bool   `json:"tracepoints"` // syscall tracepoints mntleak attaches
	Missing     map[string]string `json:"missing,omitempty"`
}

// DetectFeatures probes the kernel without loading anything. The ring
// buffer probe needs CAP_BPF; without it the answer says so.
func DetectFeatures() Features {
	f := Features{Tracepoints: map[string]bool{}, Missing: map[string]string{}}
	var u unix.Utsname
	if unix.Uname(&u) == nil {
		f.Kernel = unix.ByteSliceToString(u.Release[:])
	}
	_, err := os.Stat("/sys/kernel/btf/vmlinux")
	f.BTF = err == nil
	switch err := features.HaveMapType(ebpf.RingBuf); {
	case err == nil:
		f.RingBuffer = "yes"
	case strings.Contains(err.Error(), "not supported"):
		f.RingBuffer = "no"
	default:
		f.RingBuffer = "unknown: " + err.Error()
	}
	f.Tracefs = "not mounted"
	for _, dir := range tracefsDirs {
		if _, err := os.Stat(dir + "/events"); err == nil {
			f.Tracefs = dir
			break
		}
	}
	if f.Tracefs != "not mounted" {
		for _, name := range syscallTracepoints() {
			_, err := os.Stat(f.Tracefs + "/events/syscalls/" + name)
			f.Tracepoints[name] = err == nil
		}
	}
	if !f.BTF {
		f.Missing["btf"] = "/sys/kernel/btf/vmlinux: build the kernel with CONFIG_DEBUG_INFO_BTF=y"
	}
	return f
}

// syscallTracepoints lists the tracefs tracepoints the programs attach to.
func syscallTracepoints() []string {
	var out []string
	for _, a := range (&objects{}).attachPoints() {
		if a.group == "syscalls" {
			out = append(out, a.name)
		}
	}
	return out
}
