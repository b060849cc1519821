package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"runtime/debug"
	"sort"
	"strings"

	"github.com/mntleak/mntleak/tracer"
)

// stampedVersion is the repository's VERSION, set by the linker (-X
// main.stampedVersion=...) in the image build (deploy/image/image.sh);
// written by nothing else.
var stampedVersion string

// buildVersion reads the version and commit the Go toolchain stamped in.
func buildVersion() (version, commit string) {
	version, commit = "(unknown)", "(unknown)"
	if stampedVersion != "" {
		version = stampedVersion
	}
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return
	}
	if stampedVersion == "" {
		version = bi.Main.Version
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			commit = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				commit += "+dirty"
			}
		}
	}
	return
}

func runVersion(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("mntleak version", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	if code, done := parseCommand(fs, args, "version", stderr); done {
		return code
	}
	version, commit := buildVersion()
	feat := tracer.DetectFeatures()
	if *asJSON {
		b, _ := json.MarshalIndent(struct {
			Version  string          `json:"version"`
			Commit   string          `json:"commit"`
			Features tracer.Features `json:"features"`
		}{version, commit, feat}, "", "  ")
		fmt.Fprintln(stdout, string(b))
		return exitOK
	}
	fmt.Fprintf(stdout, "mntleak %s (commit %s)\n", version, commit)
	writeFeatures(stdout, feat)
	return exitOK
}

// writeFeatures prints what the kernel offers, one line each.
func writeFeatures(stdout io.Writer, feat tracer.Features) {
	fmt.Fprintf(stdout, "kernel:      %s\n", feat.Kernel)
	fmt.Fprintf(stdout, "btf:         %v\n", feat.BTF)
	fmt.Fprintf(stdout, "ring buffer: %s\n", feat.RingBuffer)
	fmt.Fprintf(stdout, "buffer:      %s (what --buffer=auto uses)\n", feat.Buffer)
	fmt.Fprintf(stdout, "path walk:   %s\n", feat.PathWalk)
	fmt.Fprintf(stdout, "hooks:       %s (what --hooks=auto uses)\n", feat.Hooks)
	fmt.Fprintf(stdout, "memlock:     %s\n", feat.Memlock)
	fmt.Fprintf(stdout, "tracefs:     %s (not needed: tp_btf and raw tracepoints only)\n", feat.Tracefs)
	if feat.Kprobes != "" {
		fmt.Fprintf(stdout, "kprobes:     %s (not used)\n", feat.Kprobes)
	}
	if feat.Fentry != "" {
		fmt.Fprintf(stdout, "fentry:      %s (not used)\n", feat.Fentry)
	}
	writePresent(stdout, "tracepoints: ", feat.Tracepoints)
	if feat.Syscalls != nil {
		writePresent(stdout, "syscalls:    ", feat.Syscalls)
	}
	if len(feat.Disabled) > 0 {
		fmt.Fprintf(stdout, "disabled:    %s events (optional syscalls missing)\n", strings.Join(feat.Disabled, ", "))
	}
	if len(feat.RequiredMissing) > 0 {
		fmt.Fprintf(stdout, "unusable:    required tracepoints or syscalls missing: %s\n", strings.Join(feat.RequiredMissing, ", "))
	}
}

// writePresent prints how many of the names the kernel has, and the
// missing ones by name.
func writePresent(stdout io.Writer, label string, present map[string]bool) {
	var have, lack []string
	for name, ok := range present {
		if ok {
			have = append(have, name)
		} else {
			lack = append(lack, name)
		}
	}
	sort.Strings(lack)
	fmt.Fprintf(stdout, "%s%d of %d present", label, len(have), len(present))
	if len(lack) > 0 {
		fmt.Fprintf(stdout, " (missing: %s)", strings.Join(lack, ", "))
	}
	fmt.Fprintln(stdout)
}
